"""Starting the dashboard: open the backend and put the first GPU rows on the terminal before
Textual (about 0.3 s of imports on a small machine) has even loaded.

Textual-free on purpose (only what it calls last imports it): the first frame is plain text
written to the alternate screen, which Textual then takes over and repaints.
"""

from __future__ import annotations

import argparse
import os
import sys

from gputop.errors import UsageError

SLOW_OPEN_NOTICE_S = 0.5


def open_backend_telling_why(opener, notice_after: float = SLOW_OPEN_NOTICE_S,
                             stream=None):
    """Open a backend; if it takes a while (npu-smi's first answer can take seconds), say so on
    the terminal instead of leaving it blank as if gputop had hung."""
    import sys
    import threading

    stream = stream or sys.stderr
    result: dict = {}

    def target() -> None:
        try:
            result["backend"] = opener()
        except BaseException as exc:  # handed to the caller's thread below
            result["error"] = exc

    thread = threading.Thread(target=target, name="gputop-open", daemon=True)
    thread.start()
    thread.join(notice_after)
    if thread.is_alive():
        print("gputop: waiting for the first reading from the device tool…", file=stream,
              flush=True)
        thread.join()
    if "error" in result:
        raise result["error"]
    return result["backend"]


def checked_record_fields(text: str | None) -> str | None:
    """``--record-fields``, checked before the dashboard opens rather than at the first `r`."""
    if text is None:
        return None
    from gputop.query.fields import InvalidField, parse_field_list

    try:
        parse_field_list(text)
    except InvalidField as exc:
        raise UsageError(f"--record-fields: {exc}") from None
    return text


def first_frame_text(snap, columns: int, rows: int) -> str:
    """The pre-frame: the snapshot view's header and one line per GPU, cut to the terminal."""
    from gputop.textview import render_text

    lines = render_text(snap).splitlines()[:max(1, rows - 1)]
    lines.append("starting the dashboard…")
    return "\r\n".join(line[:columns] for line in lines)


def draw_first_frame(snap, stream=None) -> bool:
    """Write the pre-frame to the terminal's alternate screen; False where stdout is no TTY."""
    stream = stream or sys.__stdout__
    try:
        if stream is None or not stream.isatty():
            return False
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError):
        return False
    # alternate screen, home, clear: Textual enters the same screen and repaints over it
    stream.write("\x1b[?1049h\x1b[H\x1b[2J" + first_frame_text(snap, size.columns, size.lines))
    stream.flush()
    return True


def leave_first_frame(stream=None) -> None:
    stream = stream or sys.__stdout__
    stream.write("\x1b[?1049l")
    stream.flush()


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


def run_dashboard(args: argparse.Namespace) -> int:
    from gputop.backends import open_backend
    from gputop.options import backend_options
    from gputop.selection import select_devices
    from gputop.tui.wants import DASHBOARD

    record_fields = checked_record_fields(args.record_fields)
    if not os.path.isdir(args.record_dir):
        raise UsageError(f"--record-dir {args.record_dir!r} is not a folder")
    args.record_fields = record_fields
    # The dashboard alone may fall back to the simulator: it says so, loudly, on the screen.
    backend = open_backend_telling_why(
        lambda: open_backend(args.backend, backend_options(args), simulate_if_absent=True))
    drawn = False
    try:
        devices = select_devices(args.ids, backend.info().devices)
        first = None
        if getattr(backend, "player", None) is None:  # a replay starts where its player is
            try:
                first = backend.sample(devices, wants=DASHBOARD)
            except Exception:  # the sampler will say what went wrong, in the dashboard
                first = None
        drawn = first is not None and draw_first_frame(first)
        import_asyncio_without_tls()
        from gputop.tui.app import run_app

        try:
            return run_app(args, backend, devices, first)
        except BaseException:
            if drawn:  # a bad theme is found after the pre-frame: leave the screen clean
                leave_first_frame()
            raise
    finally:
        backend.close()
