"""`gputop web`'s pure parts: the listen address, the token file, the served command line and
the verdict on each request. No server, no browser."""

from __future__ import annotations

import argparse
import contextlib
import io
import os

import pytest

from gputop.commands import web
from gputop.commands.main import build_parser, main
from gputop.commands.web import is_loopback, read_token
from gputop.config.options import parse_listen
from gputop.core.errors import GputopError, UsageError
from gputop.web.server import MAX_COLUMNS, MAX_ROWS, presented_token, refusal, terminal_size

TOKEN = "s3cret-token-of-24-chars"


def web_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["web", *argv])


def served_argv(args: argparse.Namespace) -> list[str]:
    """The command line `gputop web` would serve, checked by gputop's own parser."""
    return web.served_argv(args, build_parser)


def run_inline(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1:8000", ("127.0.0.1", 8000)),
    (":9400", ("", 9400)),
    ("[::1]:0", ("::1", 0)),
    ("0.0.0.0:65535", ("0.0.0.0", 65535)),
    ("node7:8080", ("node7", 8080)),
])
def test_listen_addresses(text, expected):
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["nope", "8000", "::1:80", ":65536", ":-1", ":inf", ":",
                                  "127.0.0.1:", ":" + "9" * 50, "[::1]"])
def test_bad_listen_is_one_line_naming_the_port_range(text):
    with pytest.raises(UsageError, match="--listen: .*0 to 65535"):
        parse_listen(text)
    code, err = run_inline(["web", "--backend", "sim", "--listen", text])
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize("host,loop", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("127.255.0.9", True), ("::1", True),
    ("localhost", True), ("LOCALHOST", True), ("", False), ("0.0.0.0", False), ("::", False),
    ("10.0.0.1", False), ("node7", False), ("localhost.evil.example", False),
    ("128.0.0.1", False),
])
def test_loopback_addresses_are_told_apart(host, loop):
    assert is_loopback(host) is loop


def test_token_file(tmp_path):
    good = tmp_path / "token"
    good.write_text(TOKEN + "\nsecond line ignored\n")
    assert read_token(str(good)) == TOKEN
    with pytest.raises(GputopError, match="cannot read token file .*No such file") as missing:
        read_token(str(tmp_path / "absent"))
    assert missing.value.exit_code == 1
    unreadable = tmp_path / "locked"
    unreadable.write_text(TOKEN)
    unreadable.chmod(0)
    if os.geteuid() != 0:  # root reads anything
        with pytest.raises(GputopError, match="cannot read token file .*Permission denied"):
            read_token(str(unreadable))
    for bad in ("", "\n", "short\n", "has a space in it ok\n", "x" * 5000):
        path = tmp_path / "bad"
        path.write_text(bad)
        with pytest.raises(UsageError):
            read_token(str(path))
    with pytest.raises(UsageError, match="not a regular file"):
        read_token(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):  # at once: no writer awaited
        read_token(str(fifo))
    with pytest.raises(UsageError, match=r"not a regular file \(a device\)"):
        read_token("/dev/zero")
    latin = tmp_path / "latin"
    latin.write_bytes(b"\xe9" * 20 + b"\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_token(str(latin))


def test_unreadable_token_file_is_one_line_exit_1(tmp_path):
    code, err = run_inline(["web", "--backend", "sim", "--token-file", str(tmp_path / "none")])
    assert code == 1 and err.startswith("gputop: web: cannot read token file") and \
        len(err.splitlines()) == 1, err


def test_the_served_app_reads_the_same_amd_root():
    argv = served_argv(web_args("--backend", "amd", "--sysfs-root", "/host"))
    served = build_parser().parse_args(argv)
    assert served.backend == "amd" and served.sysfs_root == "/host"


def test_served_app_is_readonly_unless_signals_are_allowed():
    argv = served_argv(web_args("--backend", "sim", "--seed", "3"))
    assert argv[0] == "--readonly"
    served = build_parser().parse_args(argv)
    assert served.readonly and served.backend == "sim" and served.seed == 3
    assert served.command is None  # the dashboard
    allowed = served_argv(web_args("--allow-signals", "--backend", "sim"))
    assert "--readonly" not in allowed
    assert not build_parser().parse_args(allowed).readonly


def test_no_readonly_after_the_double_dash_does_not_stand_for_allow_signals():
    # argparse's last --readonly/--no-readonly wins: `-- --no-readonly` would undo ours.
    with pytest.raises(UsageError, match="--no-readonly .* say --allow-signals"):
        served_argv(web_args("--backend", "sim", "--", "--no-readonly"))
    allowed = served_argv(web_args("--allow-signals", "--", "--no-readonly"))
    assert not build_parser().parse_args(allowed).readonly


def test_arguments_after_the_double_dash_are_served_and_win():
    argv = served_argv(web_args("--backend", "sim", "--", "--scenario", "straggler",
                                "--theme", "light"))
    served = build_parser().parse_args(argv)
    assert (served.scenario, served.theme, served.backend) == ("straggler", "light", "sim")
    cluster = build_parser().parse_args(served_argv(web_args("--", "cluster", "node-a",
                                                             "--ssh-config", "cfg")))
    assert cluster.command == "cluster" and cluster.hosts == ["node-a"] and cluster.readonly


@pytest.mark.parametrize("argv,message", [
    (["--", "snapshot"], "not `snapshot`"),
    (["--", "web"], "not `web`"),
    (["--", "--interval", "inf"], "--interval"),
    (["--", "--backend", "nope"], "--backend"),
    (["--", "--record-fields", "no.such.field"], "--record-fields"),
    (["--", "cluster", "--max-opening", "0"], "--max-opening"),
])
def test_a_served_command_line_that_would_not_start_is_refused_first(argv, message):
    code, err = run_inline(["web", "--backend", "sim", *argv])
    assert code == 2 and message in err and len(err.splitlines()) == 1, err


def test_token_proofs():
    assert presented_token(TOKEN, None, None, TOKEN) == "query"
    assert presented_token(None, TOKEN, None, TOKEN) == "cookie"
    assert presented_token(None, None, f"Bearer {TOKEN}", TOKEN) == "header"
    for wrong in ("", TOKEN[:-1], TOKEN + "x", TOKEN.upper()):
        assert presented_token(wrong, wrong, f"Bearer {wrong}", TOKEN) is None
    assert presented_token(None, None, TOKEN, TOKEN) is None  # not a Bearer header


def test_refusals():
    ok = dict(host_header="127.0.0.1:8000", origin=None, websocket=False)
    # No token, no answer: loopback (the host of every request here) included.
    assert refusal(proof=None, **ok).status == 401
    assert refusal(proof=None, host_header="localhost:8000", origin=None,
                   websocket=True).status == 401
    assert refusal(proof="cookie", **ok) is None
    # With the token any name does (a node's name, an ssh -L port).
    assert refusal(proof="cookie", host_header="node7:8000", origin=None,
                   websocket=False) is None
    # A websocket opened by a page of another origin, even with the cookie.
    ws = dict(proof="cookie", host_header="127.0.0.1:8000", websocket=True)
    assert refusal(origin="http://evil.example", **ws).status == 403
    assert refusal(origin="http://127.0.0.1:8001", **ws).status == 403
    assert refusal(origin="http://127.0.0.1:8000", **ws) is None
    assert refusal(origin=None, **ws) is None  # a script, not a page


def test_the_served_dashboard_reads_the_settings_file_as_the_terminals_does(tmp_path,
                                                                           monkeypatch):
    # `gputop web` passes on only what it was given: a default passed on (--interval 1.0)
    # would beat the settings file, so the browser would differ from the terminal
    from gputop.commands.dashboard import configure

    (tmp_path / "config.toml").write_text("interval = 3\n")
    monkeypatch.setenv("GPUTOP_CONFIG", str(tmp_path / "config.toml"))
    parser = build_parser()
    argv = served_argv(web_args("--backend", "sim"))
    assert "--interval" not in argv and argv.count("--backend") == 1
    assert configure(parser, argv, parser.parse_args(argv)).source.interval == 3
    given = served_argv(web_args("--interval", "0.5"))
    assert configure(parser, given, parser.parse_args(given)).source.interval == 0.5


def test_a_viewers_terminal_is_whole_cells_within_a_screen():
    assert terminal_size(120, 40) == (120, 40)
    assert terminal_size(20000, 10**12) == (MAX_COLUMNS, MAX_ROWS)
    assert terminal_size(0, -5) == (1, 1)
    assert terminal_size(99.7, 30.2) == (99, 30)
    for junk in ("120", None, [1], {"a": 1}, True, float("nan"), float("inf")):
        assert terminal_size(junk, junk) == (80, 24), junk
