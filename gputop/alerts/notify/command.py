"""The command channel: a program run for each alert, the alert in its environment and on its
standard input.

The program gets ``GPUTOP_ALERT_RULE``, ``_STATE``, ``_SEVERITY``, ``_SUMMARY``, ``_GPU``,
``_NODE``, ``_KEY``, ``_AT``, ``_SINCE`` and ``_JSON`` (the generic webhook's body), and one
``GPUTOP_ALERT_LABEL_<NAME>`` per label, over gputop's own environment; the same JSON on its
standard input. It runs without a shell (a string is split as a shell would split it, but
nothing in it is expanded) unless the channel says ``shell = true``. It runs through
`gputop.core.toolrun`: in a session of its own, killed with all it started (its whole process
group) at its timeout, and with gputop if gputop dies. A non-zero exit is a failure naming the
code and the first line the program wrote to standard error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from gputop.alerts.model import Alert, DeliveryError
from gputop.alerts.notify import payloads
from gputop.core import toolrun
from gputop.core.visible import valid_unicode

PREFIX = "GPUTOP_ALERT_"
MAX_OUTPUT = 64 << 10  # what it prints is not used; a runaway one is stopped here
_NOT_NAME = re.compile(r"[^A-Z0-9_]")


def alert_environment(alert: Alert) -> dict[str, str]:
    """Return the ``GPUTOP_ALERT_*`` variables for ``alert`` (absent values as '')."""
    env = {
        "RULE": alert.rule, "STATE": alert.state, "SEVERITY": alert.severity,
        "SUMMARY": alert.summary, "KEY": alert.key, "NODE": alert.node or "",
        "GPU": "" if alert.gpu is None else str(alert.gpu),
        "AT": payloads.when(alert.at), "SINCE": payloads.when(alert.since),
        "JSON": payloads.body("generic", alert).decode("utf-8"),
    }
    for name, value in alert.labels:
        env.setdefault("LABEL_" + _NOT_NAME.sub("_", name.upper()), value)
    # an environment holds no NUL, and no byte that is not UTF-8 a script could trip on
    return {PREFIX + k: valid_unicode(v).replace("\0", "") for k, v in env.items()}


def command_argv(command: str | Sequence[str], shell: bool) -> list[str]:
    """Return the argv to run: a list as it is; a string split as a shell would split it
    (quotes kept together, nothing expanded), or handed to ``/bin/sh -c`` if ``shell``.
    Raises ValueError for an empty command or unbalanced quotes."""
    import shlex

    if isinstance(command, str):
        argv = ["/bin/sh", "-c", command] if shell else shlex.split(command)
    else:
        argv = list(command)
    if not argv or not argv[0]:
        raise ValueError("the command is empty")
    return argv


class CommandNotifier:
    """Runs ``argv`` once per alert, bounded by the dispatcher's timeout."""

    def __init__(self, name: str, argv: Sequence[str],
                 environ: Mapping[str, str] | None = None) -> None:
        self._name = name
        self._argv = list(argv)
        self._environ = dict(os.environ if environ is None else environ)
        self._runner = toolrun.ToolRunner()

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"CommandNotifier(name={self._name!r}, argv={self._argv!r})"

    def describe(self) -> str:
        """Return what the channel is, as messages name it: ``command notify.sh``."""
        return f"command {os.path.basename(self._argv[0])}"

    def close(self) -> None:
        """Kill a run in flight (the dispatcher's close, at its deadline)."""
        self._runner.close()

    def send(self, alert: Alert, timeout_s: float) -> None:
        """Run the command for ``alert``; raise DeliveryError unless it exits 0 in time."""
        env = {**self._environ, **alert_environment(alert)}
        what = os.path.basename(self._argv[0])
        try:
            done = self._runner.run(self._argv, timeout_s, max_output=MAX_OUTPUT, env=env,
                                    stdin=payloads.body("generic", alert) + b"\n")
        except toolrun.ToolTimeout:
            raise DeliveryError(f"{what} ran past {timeout_s:.3g} s: killed") from None
        except toolrun.ToolOutputTooLarge:
            raise DeliveryError(f"{what} printed more than {MAX_OUTPUT >> 10} KiB: killed") from None
        except toolrun.ToolClosed:
            raise DeliveryError(f"{what} was stopped: gputop is closing") from None
        except OSError as exc:
            raise DeliveryError(f"cannot run {what}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            code = (f"killed by signal {-done.returncode}" if done.returncode < 0
                    else f"exit {done.returncode}")
            message = done.message()
            raise DeliveryError(f"{what}: {code}" + (f": {message}" if message else ""))
