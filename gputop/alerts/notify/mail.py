"""The mail channel: each alert as a plain-text message handed to the local ``sendmail``.

``sendmail -t -oi`` reads the recipients from the message's headers (``-t``) and does not take a
line holding one dot as its end (``-oi``); every MTA ships a program of that name (Postfix,
Exim, OpenSMTPD, msmtp, nullmailer), so gputop speaks no SMTP and holds no mail password. It is
looked for on PATH, then in /usr/sbin and /usr/lib, when the channel is built: a mail channel on a
node without one is refused at start, in one line (`channels`), not at the first alert.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping, Sequence

from gputop import __version__
from gputop.alerts.model import Alert, DeliveryError
from gputop.alerts.notify import payloads
from gputop.core import toolrun
from gputop.core.visible import visible

SENDMAIL_DIRS = ("/usr/sbin", "/usr/lib")  # where MTAs install it when PATH lacks them


def find_sendmail(environ: Mapping[str, str] | None = None) -> str | None:
    """Return the path of ``sendmail`` on PATH, or in /usr/sbin or /usr/lib; None if none."""
    env = os.environ if environ is None else environ
    path = os.pathsep.join([p for p in [env.get("PATH", "")] if p] + list(SENDMAIL_DIRS))
    return shutil.which("sendmail", path=path)


def message(alert: Alert, to: Sequence[str], sender: str | None = None) -> bytes:
    """Return the mail for ``alert``: headers (To, From if given, Subject, Date) and a
    plain-text body of its summary and facts, UTF-8."""
    # email loads here, at the first mail: the start-up check needs only find_sendmail.
    from email.message import EmailMessage
    from email.policy import default as default_policy
    from email.utils import formatdate

    # Headers unfolded: a subject of at most 200 characters stays one line (SMTP allows 998).
    msg = EmailMessage(policy=default_policy.clone(max_line_length=998))
    msg["To"] = ", ".join(to)
    if sender:
        msg["From"] = sender
    # the subject is one visible line: no header can be smuggled into it
    msg["Subject"] = payloads.cut(f"[gputop] {payloads.headline(alert)}", 200)
    msg["Date"] = formatdate(alert.at, usegmt=True)
    msg["X-Gputop-Alert-Key"] = payloads.cut(visible(alert.key), 200)
    rows = payloads.facts(alert)
    width = max(len(name) for name, _ in rows)
    text = visible(alert.summary) + "\n\n" + "\n".join(
        f"{name:<{width}}  {value}" for name, value in rows)
    text += f"\n\n-- \ngputop {__version__} on {socket.gethostname()}\n"
    msg.set_content(text, charset="utf-8")
    return msg.as_bytes()


class MailNotifier:
    """Hands each alert to ``sendmail -t -oi`` for the addresses in ``to``."""

    def __init__(self, name: str, sendmail: str, to: Sequence[str],
                 sender: str | None = None) -> None:
        self._name = name
        self._sendmail = sendmail
        self._to = tuple(to)
        self._sender = sender
        self._runner = toolrun.ToolRunner()

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"MailNotifier(name={self._name!r}, sendmail={self._sendmail!r}, to={self._to!r})"

    def describe(self) -> str:
        """Return what the channel is, as messages name it: ``mail to ops@example.com``."""
        return "mail to " + ", ".join(self._to)

    def close(self) -> None:
        """Kill a sendmail in flight (the dispatcher's close, at its deadline)."""
        self._runner.close()

    def send(self, alert: Alert, timeout_s: float) -> None:
        """Hand the message to sendmail; raise DeliveryError unless it exits 0 in time."""
        argv = [self._sendmail, "-t", "-oi"]
        try:
            done = self._runner.run(argv, timeout_s, stdin=message(alert, self._to, self._sender))
        except toolrun.ToolTimeout:
            raise DeliveryError(f"sendmail ran past {timeout_s:g} s: killed") from None
        except (toolrun.ToolOutputTooLarge, toolrun.ToolClosed):
            raise DeliveryError("sendmail was stopped") from None
        except OSError as exc:
            raise DeliveryError(f"cannot run {self._sendmail}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            text = done.message()
            raise DeliveryError(f"sendmail: exit {done.returncode}" + (f": {text}" if text else ""))
