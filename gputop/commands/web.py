"""`gputop web [--listen ADDR:PORT] [-- gputop arguments]`: the dashboard or the cluster view in a
browser, served by textual-serve (one app process per browser tab).

This module parses and checks; the server (`gputop.web.server`, the only importer of textual-serve
and aiohttp) is imported when the command runs. Everything that can be wrong on the command line
is found here, before a port is opened: a bad `--listen`, an unreadable token file, a served
command line that would not start.
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

from gputop.commands.common import bounded
from gputop.core import bounds
from gputop.core.errors import GputopError, UsageError

DEFAULT_LISTEN = "127.0.0.1:8000"
DEFAULT_MAX_VIEWERS = 8
# A served command is the dashboard (no command), the cluster view or a replay: the apps a
# browser can show. Anything else would start, print and end once per browser tab.
SERVABLE = (None, "cluster", "replay")
MIN_TOKEN_CHARS = 16
MAX_TOKEN_FILE_BYTES = 4096


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="ADDR:PORT",
                        help=f"where to serve (default: {DEFAULT_LISTEN}; reach it from elsewhere "
                             "with ssh -L); every address asks for the token, loopback too")
    parser.add_argument("--token-file", metavar="FILE",
                        help="the token browsers must present (first line of FILE); without it, "
                             "one is generated, printed once in the URL and written nowhere")
    parser.add_argument("--allow-signals", action="store_true",
                        help="let viewers signal processes from the process table: only the "
                             "serving user's own, never by root's privilege; off by default")
    parser.add_argument("--max-viewers", type=bounded(bounds.WEB_MAX_VIEWERS),
                        default=DEFAULT_MAX_VIEWERS, metavar="N",
                        help="browser tabs open at once, each one an app process of about "
                             f"{bounds.WEB_VIEWER_MB} MB (default: {DEFAULT_MAX_VIEWERS}; "
                             f"{bounds.WEB_MAX_VIEWERS.describe()})")
    parser.add_argument("app_args", nargs=argparse.REMAINDER, metavar="-- ARGS",
                        help="the gputop command line to serve: dashboard options, "
                             "`cluster …` or `replay …`")


def is_loopback(host: str) -> bool:
    """Whether a listen address is this machine only (so ssh -L reaches it): ``localhost``,
    127.0.0.0/8 or ::1. Any other name or address, and "" (every address), is not."""
    import ipaddress

    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> str:
    """The token in ``path``: its first line, stripped; at least 16 printable characters."""
    from gputop.core import userfile

    try:
        text = userfile.read_text(path, MAX_TOKEN_FILE_BYTES)
    except FileNotFoundError as exc:
        raise GputopError(f"web: cannot read token file {path}: {exc.strerror}") from None
    except userfile.Unreadable as exc:
        raise GputopError(f"web: cannot read token file {path}: {exc.reason}") from None
    except userfile.FileProblem as exc:
        raise UsageError(f"web: token file {path}: {exc}") from None
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or any(c.isspace() for c in token):
        raise UsageError(f"web: token file {path} must start with a token of at least "
                         f"{MIN_TOKEN_CHARS} printable characters without spaces")
    return token


ParserFactory = Callable[[], argparse.ArgumentParser]


@dataclass(frozen=True)
class WebConfig:
    """What `gputop web` serves, and how: checked, before any port is opened."""

    host: str  # "" is every address
    port: int
    listen: str  # as given, for messages
    argv: tuple[str, ...]  # the gputop arguments each viewer's app process runs with
    token_file: str | None = None  # None: a token is generated
    max_viewers: int = DEFAULT_MAX_VIEWERS


def configure(args: argparse.Namespace, build_parser: ParserFactory) -> WebConfig:
    """The web command's config; ``build_parser`` is gputop's own parser, which checks the
    command line served."""
    from gputop.config.options import parse_listen

    host, port = parse_listen(args.listen)
    argv = served_argv(args, build_parser)
    return WebConfig(host=host, port=port, listen=args.listen, argv=tuple(argv),
                     token_file=args.token_file, max_viewers=args.max_viewers)


def common_argv(args: argparse.Namespace, build_parser: ParserFactory) -> list[str]:
    """The options given to `gputop web` itself (`gputop web --backend sim`), for the served
    command line, where arguments after ``--`` come later and so win. Only those that differ
    from their defaults: a default passed on would override the serving user's settings file
    (its interval, say), which the served dashboard reads as the terminal's does."""
    defaults = build_parser().parse_args([])
    argv = [part for option, value, default, text in (
                ("--backend", args.backend, defaults.backend, str),
                ("--scenario", args.scenario, defaults.scenario, str),
                ("--seed", args.seed, defaults.seed, str),
                ("--sim-speed", args.sim_speed, defaults.sim_speed, repr),
                ("--interval", args.interval, defaults.interval, repr))
            if value != default
            for part in (option, text(value))]
    optional = (("--sim-state", args.sim_state), ("--npu-smi", args.npu_smi),
                ("--replay", args.replay), ("--sysfs-root", args.sysfs_root), ("--id", args.ids),
                ("--theme", args.theme),
                ("--record-fields", args.record_fields))
    argv += [part for option, value in optional if value is not None for part in (option, value)]
    if args.record_dir != ".":
        argv += ["--record-dir", args.record_dir]
    return argv


def served_argv(args: argparse.Namespace, build_parser: ParserFactory) -> list[str]:
    """The gputop arguments each viewer's app process runs with, checked by gputop's own
    parser. Signals are off (``--readonly``) unless ``--allow-signals``."""
    extra = list(args.app_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    argv = ((["--readonly"] if not args.allow_signals else []) + common_argv(args, build_parser)
            + extra)
    served = build_parser().parse_args(argv)  # a bad one: its one line, exit 2
    if not args.allow_signals and not served.readonly:  # `-- --no-readonly` came after ours
        raise UsageError("web: --no-readonly would let every viewer signal processes and write "
                         "files: say --allow-signals to mean that")
    if served.command not in SERVABLE:
        raise UsageError(f"web: serves the dashboard, `cluster …` or `replay …`, not "
                         f"`{served.command}`")
    if served.command is None:
        from gputop.commands.dashboard import checked_record_fields

        checked_record_fields(served.record_fields)
        if not os.path.isdir(served.record_dir):
            raise UsageError(f"--record-dir {served.record_dir!r} is not a folder")
    return argv


def page_url(host: str, port: int, token: str | None) -> str:
    shown = host if host not in ("", "0.0.0.0", "::") else socket.gethostname()
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def run(config: WebConfig) -> int:
    import secrets

    host, argv = config.host, list(config.argv)
    # On every interface, loopback too: every user of a shared node can reach 127.0.0.1.
    token = read_token(config.token_file) if config.token_file else secrets.token_urlsafe(24)

    def announce(bound_port: int) -> None:
        # A token of the user's own file is not copied into logs: the URL says where it is.
        url = page_url(host, bound_port, None if config.token_file else token)
        given = f"token: the first line of {config.token_file}; " if config.token_file else ""
        lines = [f"gputop web: {url} ({given}at most {config.max_viewers} viewers, about "
                 f"{bounds.WEB_VIEWER_MB} MB each; serving: gputop {shlex.join(argv)})"]
        if is_loopback(host):
            lines.append(f"gputop web: from another machine: ssh -L {bound_port}:127.0.0.1:"
                         f"{bound_port} {socket.gethostname()}, then open the address above")
        print("\n".join(lines), file=sys.stderr, flush=True)

    from gputop.web.server import Config, serve

    return serve(Config(host=host, port=config.port, listen=config.listen,
                        argv=(sys.executable, "-m", "gputop", *argv), token=token,
                        max_viewers=config.max_viewers, title=f"gputop · {socket.gethostname()}"),
                 announce)
