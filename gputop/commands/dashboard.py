"""Starting the dashboard: open the backend, take the first sample and say on the terminal that
the dashboard is coming, before Textual (about 0.2 s of imports on a small machine) has loaded.

Textual-free on purpose (only what it calls last imports it): the pre-frame is one line of plain
text on the alternate screen, on the header's row, which Textual then takes over. It shows nothing
that Textual's first frame puts elsewhere: a preview of the GPUs laid out otherwise was a whole
screen that jumped a quarter of a second later (#26).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from gputop.commands.common import source_config
from gputop.config.dashboard import DashboardConfig
from gputop.config.options import SourceConfig
from gputop.config.settings import Settings
from gputop.core import bounds
from gputop.core.errors import UsageError
from gputop.core.lifeline import Lifeline, Stopped, Terminal, quit_code
from gputop.core.selection import select_devices

if TYPE_CHECKING:
    from gputop.alerts.runtime import AlertConfig

SLOW_OPEN_NOTICE_S = 0.5


def open_backend_telling_why(opener, notice_after: float = SLOW_OPEN_NOTICE_S,
                             stream=None):
    """Open a backend; if it takes a while (npu-smi's first answer can take seconds), say so on
    the terminal instead of leaving it blank as if gputop had hung.

    The backend opens in this (the main) thread, so that a stop signal raised here unwinds
    through the backend's own clean-up (an npu-smi child killed); a timer prints the notice."""
    import threading

    stream = stream or sys.stderr
    lock = threading.Lock()
    opened = threading.Event()

    def notice() -> None:
        with lock:  # never after the open returned: the preview may be on the screen by then
            if not opened.is_set():
                print("gputop: waiting for the first reading from the device tool…",
                      file=stream, flush=True)

    timer = threading.Timer(notice_after, notice)
    timer.daemon = True
    timer.start()
    try:
        return opener()
    finally:
        timer.cancel()
        with lock:
            opened.set()


def checked_record_fields(text: str | None) -> str | None:
    """``--record-fields``, checked before the dashboard opens rather than at the first `r`."""
    if text is None:
        return None
    from gputop.formats.query_fields import InvalidField, parse_field_list

    try:
        parse_field_list(text)
    except InvalidField as exc:
        raise UsageError(f"--record-fields: {exc}") from None
    return text


def has_terminal() -> bool:
    """Whether there is a terminal to run the dashboard on: standard input and output are TTYs
    and this process has a controlling terminal. textual-serve's web driver (``TEXTUAL_DRIVER``)
    draws over pipes, with none. Without one, a full-screen app would wait forever for keys
    nobody can type (a script's ``subprocess.check_output(["gputop"])``, a shim named
    nvidia-smi, ``setsid``, cron)."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return True
    try:
        if sys.stdin is None or sys.stdout is None:
            return False
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            return False
        # opening /dev/tty fails (ENXIO) in a process with no controlling terminal
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except (OSError, ValueError):
        return False
    os.close(fd)
    return True


def check_theme(config: DashboardConfig) -> None:
    """Refuse a theme that names no usable theme, as the dashboard does on opening."""
    if config.theme is None:
        return
    from gputop.tui import themes

    themes.check_theme(config, [t.name for t in themes.all_themes()[0]])


def first_frame_text(host: str, columns: int) -> str:
    """The pre-frame: the header's first words (gputop and the backend's ``host``, as the header
    starts) and that the dashboard is starting, cut to the terminal's width."""
    from gputop.core.visible import visible

    return f"gputop {visible(host)}  starting the dashboard…"[:columns]


def draw_first_frame(host: str, stream=None, terminal: Terminal | None = None) -> bool:
    """Write the pre-frame to the terminal's alternate screen, on the row where the header will
    be; False where stdout is no TTY. ``terminal`` is marked taken before the first byte, so that
    any way out puts it back."""
    stream = stream or sys.__stdout__
    try:
        if stream is None or not stream.isatty():
            return False
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError):
        return False
    if terminal is not None:
        terminal.taken = True
    # alternate screen, home, clear: Textual enters the same screen and repaints over it
    stream.write("\x1b[?1049h\x1b[H\x1b[2J" + first_frame_text(host, size.columns))
    stream.flush()
    return True


def import_asyncio_without_tls() -> None:
    """Import asyncio (Textual's event loop) without ssl, which it imports only for TLS transports
    that the dashboard never opens: ssl maps libcrypto, about 4 MB of the dashboard's RSS.
    A later ``import ssl`` in this process still works; asyncio's own TLS support stays off."""
    if "asyncio" in sys.modules or "ssl" in sys.modules:
        return
    sys.modules["ssl"] = None  # type: ignore[assignment]  # importing ssl now raises ImportError
    try:
        import asyncio  # noqa: F401 - asyncio catches that ImportError: ssl = None
    finally:
        del sys.modules["ssl"]


# The dashboard's options the settings file gives defaults for, each named as the option's
# argparse dest and as the `gputop.config.settings.Settings` field that holds the file's value.
SETTINGS_DEFAULTS = ("theme", "interval", "readonly", "record_fields")


def configure(parser: argparse.ArgumentParser, argv: list[str],
              args: argparse.Namespace) -> DashboardConfig:
    """The dashboard's config (``gputop``, ``gputop replay``): the command line parsed again with
    the settings file's values as the options' defaults, so that what the command line gives
    wins. Every value in the file is checked here, before any device is opened."""
    from gputop.config.settings import load, settings_path

    path, named = settings_path(args.config, args.no_config)
    found = load(path, named)
    if found.alerts is not None:  # bad rules stop the dashboard too, before any device opens
        alert_config(found)
    file_says = {"theme": found.theme, "interval": found.interval, "readonly": found.readonly,
                 "record_fields": found.record_fields}
    defaults = {dest: file_says[dest] for dest in SETTINGS_DEFAULTS if file_says[dest] is not None}
    theme_given = args.theme is not None
    if defaults:
        parser.set_defaults(**defaults)
        args = parser.parse_args(argv)
    return DashboardConfig(source=source_config(args), theme=args.theme,
                           theme_from_settings=found.theme is not None and not theme_given,
                           readonly=bool(args.readonly), record_fields=args.record_fields,
                           record_dir=args.record_dir, settings=found,
                           history_s=args.history if args.history is not None
                           else bounds.HISTORY_DEFAULT_S)


def alert_config(found: Settings) -> AlertConfig:
    """Return the settings file's ``[alerts]`` table checked: its rules (the defaults where
    there is none), channels and journal. A bad rule, channel or journal path, a mail channel
    with no sendmail or a command that is not there is a `UsageError`, one line."""
    from gputop.alerts.runtime import read_config

    config = read_config(found.alerts, found.path or "settings")
    if config.channels:  # what only this node can say; loads no http or mail
        from gputop.alerts.notify.channels import check

        check(config.channels, config.where)
    return config


def checked(config: DashboardConfig) -> DashboardConfig:
    """``config`` with its recording options checked: a bad one is one line, before any device
    is opened, whether or not the dashboard then opens."""
    from dataclasses import replace

    config = replace(config, record_fields=checked_record_fields(config.record_fields))
    if not os.path.isdir(config.record_dir):
        raise UsageError(f"--record-dir {config.record_dir!r} is not a folder")
    return config


def run_dashboard(config: DashboardConfig) -> int:
    """Open the backend, draw the pre-frame and run the dashboard, all under one lifeline:
    from before the first byte reaches the terminal, every way out gives it back."""

    from functools import partial

    from gputop.tui.text.wants import DASHBOARD

    config = checked(config)
    # Read after the first frame (configure checked a file's [alerts] before any device):
    # the channels load what no first frame needs (tests/support/start_imports.py). None for a
    # replay: its samples happened long ago, and their alerts went out then.
    alerts = None if config.source.backend == "replay" else partial(alert_config,
                                                                    config.settings)
    terminal = Terminal()
    backend = None
    with Lifeline(quit_code, terminal) as lifeline:
        try:  # first in the body: a signal from __enter__ on raises Stopped, caught here
            backend = open_backend_telling_why(lambda: _open(config.source))
            devices = select_devices(config.source.ids, backend.info().devices)
            first = None
            if backend.player is None:  # a replay starts where its player is
                try:
                    first = backend.sample(devices, wants=DASHBOARD)
                except Exception:  # the sampler will say what went wrong, in the dashboard
                    first = None
            draw_first_frame(backend.info().host, terminal=terminal)
            import_asyncio_without_tls()
            from gputop.tui.app import run_app

            return run_app(config, backend, devices, first, lifeline, alerts)
        except Stopped as stop:
            return stop.code
        finally:
            lifeline.detach()  # a signal from here on only bounds the exit
            if backend is not None:
                backend.close()


def _open(source: SourceConfig):
    from gputop.backends import open_backend

    # The dashboard alone may fall back to the simulator: it says so, loudly, on the screen.
    return open_backend(source.backend, source.options, simulate_if_absent=True)
