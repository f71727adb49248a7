"""Every file gputop reads that a user can put in its way, in every bad form, through the real
command: one stderr line naming the file, the documented exit code, at once (#24).

The kinds: the settings file, a theme, a hosts file, the simulator's --sim-state file, the
advisor's journal and a replay log. The forms: a FIFO (never waited on), a link to /dev/zero
(never read whole), a folder, bytes that are not UTF-8, a NUL, 100 000 levels of nesting, a key
or column that gputop does not know, and one given twice.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gputop.advisor import journal
from tests.support.paths import ROOT, gputop_cmd

DEEP = 100_000
DEEP_TOML = ("a = " + "[" * DEEP + "]" * DEEP + "\n").encode()
DEEP_JSON = ("[" * DEEP + "]" * DEEP).encode()
TIMEOUT_S = 30  # a FIFO that is waited on would hang until this kills the run


def journal_text(**extra: object) -> str:
    doc = {"schema": journal.SCHEMA, "host": "h", "backend": "sim", "pid": 1, "started": 1.0,
           "devices": [{"index": 0, "uuid": "GPU-x", "original_limit_w": 700.0}], **extra}
    return json.dumps(doc)


@dataclass(frozen=True)
class Kind:
    """A file gputop reads: where it lies, the command that reads it, the exit code a bad one
    gets, and its content in each bad form that is content (None: the form does not apply)."""

    where: Callable[[Path], Path]
    argv: Callable[[Path], list[str]]
    exit_code: int
    content: dict[str, bytes | None]


KINDS = {
    "settings": Kind(
        lambda tmp: tmp / "config.toml",
        lambda path: ["--backend", "sim", "--config", str(path)], 2,
        {"not-utf8": b'theme = "dark"\n# \xff\n', "nul": b'theme = "dark"\x00\n',
         "deep": DEEP_TOML, "unknown": b'colour = "dark"\n',
         "twice": b'theme = "dark"\ntheme = "light"\n'}),
    "theme": Kind(
        lambda tmp: tmp / "cfg" / "gputop" / "themes" / "mine.toml",
        lambda path: ["--backend", "sim", "--theme", "mine"], 2,
        {"not-utf8": b'name = "mine"\n# \xff\n', "nul": b'name = "mine"\x00\n',
         "deep": DEEP_TOML,
         "unknown": b'name = "mine"\nshade = true\n[colors]\nprimary = "#ffffff"\n',
         "twice": b'name = "mine"\nname = "yours"\n[colors]\nprimary = "#ffffff"\n'}),
    "hosts": Kind(
        lambda tmp: tmp / "hosts.toml",
        lambda path: ["cluster", "--hosts", str(path), "--once"], 2,
        {"not-utf8": b'[[host]]\nname = "a"\n# \xff\n', "nul": b'[[host]]\nname = "a"\x00\n',
         "deep": DEEP_TOML, "unknown": b'port = 22\n[[host]]\nname = "a"\n',
         "twice": b'[[host]]\nname = "a"\nname = "b"\n'}),
    "sim-state": Kind(
        lambda tmp: tmp / "state.json",
        lambda path: ["snapshot", "--backend", "sim", "--sim-state", str(path)], 1,
        {"not-utf8": b'{"power_limits": {"\xff": 1}}', "nul": b'{"power_limits": {}}\x00',
         "deep": DEEP_JSON, "unknown": b'{"power_limit": {}}',
         "twice": b'{"power_limits": {}, "power_limits": {}}'}),
    "journal": Kind(
        lambda tmp: tmp / "state" / "gputop" / f"{journal.PREFIX}h-sim-x.json",
        lambda path: ["advise", "--backend", "sim", "--restore"], 1,
        {"not-utf8": journal_text(host="HOST").encode().replace(b"HOST", b"\xff"),
         "nul": journal_text().encode() + b"\x00", "deep": DEEP_JSON,
         "unknown": journal_text(restore_to=0).encode(),
         "twice": journal_text().replace('"pid": 1', '"pid": 1, "pid": 2').encode()}),
    "replay-log": Kind(
        lambda tmp: tmp / "log.csv",
        lambda path: ["snapshot", "--backend", "replay", "--replay", str(path)], 1,
        {"not-utf8": b"index, \xff\n0, 1\n", "nul": b"index, power.draw [W]\x00\n0, 1 W\n",
         "deep": None,  # a CSV log does not nest
         "unknown": b"index, power.draw [W], bogus.field\n0, 1 W, x\n",
         "twice": b"index, power.draw [W], index\n0, 1 W, 0\n"}),
}


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def make_folder(path: Path) -> None:
    path.mkdir()


SPECIAL = {"fifo": make_fifo, "dev-zero": make_dev_zero, "folder": make_folder}
FORMS = [*SPECIAL, "not-utf8", "nul", "deep", "unknown", "twice"]
CASES = [(kind, form) for kind in KINDS for form in FORMS
         if form in SPECIAL or KINDS[kind].content[form] is not None]


def run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """The real command, with the test's own config and state folders and no terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "cfg"), XDG_STATE_HOME=str(tmp_path / "state"),
               HOME=str(tmp_path / "home"))
    return subprocess.run(gputop_cmd(*argv), capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=env, cwd=ROOT, stdin=subprocess.DEVNULL)


def assert_one_line(proc: subprocess.CompletedProcess, path: Path, exit_code: int) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-2000:]
    assert str(path) in lines[0], lines[0]
    assert proc.returncode == exit_code, (proc.returncode, lines[0])
    return lines[0]


def make(kind: Kind, form: str, tmp_path: Path) -> Path:
    path = kind.where(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if form in SPECIAL:
        SPECIAL[form](path)
    else:
        content = kind.content[form]
        assert content is not None
        path.write_bytes(content)
    return path


WHY = {"fifo": "a FIFO", "dev-zero": "a device", "folder": "a folder", "not-utf8": "UTF-8",
       "nul": "NUL", "deep": "nested deeper than 64 levels", "unknown": "",
       "twice": ""}


@pytest.mark.parametrize("kind,form", CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_a_bad_file_is_one_line_naming_it(tmp_path, kind, form):
    path = make(KINDS[kind], form, tmp_path)
    line = assert_one_line(run(tmp_path, *KINDS[kind].argv(path)), path, KINDS[kind].exit_code)
    assert WHY[form] in line


@pytest.mark.parametrize("argv", [
    ["snapshot", "--backend", "replay", "--replay"],
    ["--backend", "replay", "--query-gpu=index", "--format=csv", "--replay"],
    ["replay"],
], ids=["snapshot", "query-mode", "replay-dashboard"])
@pytest.mark.parametrize("form", ["folder", "nul", "unknown", "twice"])
def test_each_replay_command_refuses_a_bad_log_in_one_line(tmp_path, argv, form):
    path = make(KINDS["replay-log"], form, tmp_path)
    proc = run(tmp_path, *argv, str(path))
    assert proc.stdout == ""
    assert_one_line(proc, path, 1)


def test_a_log_column_is_named_by_position_and_name(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(KINDS["replay-log"].content["twice"])
    line = assert_one_line(run(tmp_path, "snapshot", "--backend", "replay", "--replay",
                               str(path)), path, 1)
    assert line.endswith("log.csv:1: column 3, 'index', repeats column 1 (index): a log names "
                         "each field once"), line
    path.write_bytes(KINDS["replay-log"].content["unknown"])
    line = assert_one_line(run(tmp_path, "snapshot", "--backend", "replay", "--replay",
                               str(path)), path, 1)
    assert line.endswith("log.csv:1: column 3, 'bogus.field', is not a --query-gpu field"), line


def test_the_dashboard_notes_an_unreadable_journal_and_goes_on(tmp_path):
    """The journal is read at every start of the dashboard and of `gputop advise`: a bad one is
    a warning line there (the run goes on), not a traceback on every start."""
    path = make(KINDS["journal"], "deep", tmp_path)
    proc = run(tmp_path, "advise", "--backend", "sim", "--window", "0.1", "--sim-speed", "100")
    line = assert_one_line(proc, path, 0)
    assert line.startswith("gputop: warning: power-limit journal") and "nested deeper" in line
    assert "Power over the last" in proc.stdout


# ---------------------------------------------------------------- a --sim-state gputop cannot write


def without_dac_override() -> None:
    """In a child run as root: give up CAP_DAC_OVERRIDE from the bounding set, so that after
    exec the folder's mode bits bind root as they bind any user."""
    import ctypes

    pr_capbset_drop, cap_dac_override = 24, 1
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_capbset_drop, cap_dac_override, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")


def test_a_read_only_sim_state_folder_is_one_line_and_changes_nothing(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    state = folder / "state.json"
    folder.chmod(0o555)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUTOP_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    try:
        proc = subprocess.run(
            gputop_cmd("advise", "--backend", "sim", "--sim-state", str(state), "--sweep",
                       "--settle", "0", "--measure", "0.5", "--sim-speed", "100"),
            capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=ROOT,
            stdin=subprocess.DEVNULL, preexec_fn=without_dac_override if os.geteuid() == 0 else None)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 1 and proc.stdout == "" and "Traceback" not in proc.stderr
    *progress, last = proc.stderr.splitlines()
    assert last == (f"gputop: simulator state file {state}: cannot write in its folder: "
                    "Permission denied")
    assert all(line.startswith("gputop advise: ") for line in progress), progress
    assert list(folder.iterdir()) == []  # no state file, no temporary file left
    assert list((tmp_path / "state" / "gputop").glob(f"{journal.PREFIX}*")) == []  # nor journal


def left_journal(tmp_path: Path) -> Path:
    """A journal of the simulator's GPUs left by a run that is over (pid 1 is no gputop)."""
    from gputop.backends import open_backend
    from gputop.backends.base import BackendOptions

    backend = open_backend("sim", BackendOptions())
    try:
        info = backend.info()
    finally:
        backend.close()
    path = tmp_path / "state" / "gputop" / f"{journal.PREFIX}left.json"
    path.parent.mkdir(parents=True)
    path.write_text(journal_text(host=info.host, devices=[
        {"index": d.index, "uuid": d.uuid, "original_limit_w": 700.0} for d in info.devices]))
    return path


def test_a_journal_left_behind_is_one_line_where_it_stops_a_sweep(tmp_path):
    """What a failed run leaves is said once: the sweep it stops refuses in one line (it was a
    two-line warning and then the error), the passive view warns in one line and goes on."""
    path = left_journal(tmp_path)
    refused = run(tmp_path, "advise", "--backend", "sim", "--sweep", "--sim-speed", "100")
    line = assert_one_line(refused, path, 1)
    assert "a sweep now would take them for the originals" in line and "--restore" in line
    passive = run(tmp_path, "advise", "--backend", "sim", "--window", "0.1", "--sim-speed", "100")
    line = assert_one_line(passive, path, 0)
    assert line.startswith("gputop: warning: an earlier `gputop advise` run changed power limits")
    assert line.endswith("Run `gputop advise --restore` to restore them.")
