"""Query-mode command line: nvidia-smi's flags, its error messages and exit codes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from gputop.commands.main import main
from tests.support.paths import ROOT, gputop_cmd
from tests.support.query import FIX


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def test_invalid_field_is_nvidia_smis_message_and_exit_2():
    proc = run("--backend", "sim", "--query-gpu=index,device_minor", "--format=csv")
    assert proc.returncode == 2
    assert proc.stdout == 'Field "device_minor" is not a valid field to query.\n\n'
    assert proc.stderr == ""


def test_invalid_compute_apps_field(capsys):
    assert main(["--backend", "sim", "--query-compute-apps=pid,index", "--format=csv"]) == 2
    assert capsys.readouterr().out == 'Field "index" is not a valid field to query.\n\n'


@pytest.mark.parametrize("args, message", [
    (["--query-gpu=index"], "--query-gpu needs --format=csv[,noheader][,nounits]"),
    (["--query-gpu=index", "--format=xml"], "invalid --format option 'xml'"),
    (["--query-gpu=index", "--format=noheader"], "--format must include csv"),
    (["--query-gpu=index", "--format=csv", "-l", "0"],
     "argument -l/--loop: expected a number from 0.001 to 86400 s, not '0'"),
    (["--query-gpu=index", "--format=csv", "-l", "soon"], "argument -l/--loop: expected a number"),
    (["--query-gpu=index", "--format=csv", "-lms", "-5"],
     "argument -lms/--loop-ms: expected a whole number from 1 to 86400000 ms, not '-5'"),
    (["--query-gpu=index", "--format=csv", "-lms", "1.5"], "argument -lms/--loop-ms: expected a whole"),
    (["--query-gpu=index", "--format=csv", "-l", "1", "-lms", "10"], "not allowed with"),
    (["--query-gpu=index", "--format=csv", "-i", "12"], "no device matches id '12'"),
    (["--query-gpu=index", "--format=csv", "-i", "GPU-nope"], "no device matches id 'GPU-nope'"),
    (["--query-gpu=index", "--query-compute-apps=pid", "--format=csv"], "not allowed with"),
])
def test_bad_input_is_one_line_and_nonzero(capsys, args, message):
    code = main(["--backend", "sim", *args])
    err = capsys.readouterr()
    assert code == 2
    assert err.out == ""
    assert err.err.count("\n") == 1 and err.err.startswith("gputop: ") and message in err.err


def test_help_query_flags_print_nvidia_smis_text():
    proc = run("--help-query-compute-apps")
    assert proc.returncode == 0
    assert proc.stdout == (FIX / "help-query-compute-apps_590.48.01_h100.txt").read_text()
    proc = run("--help-query-gpu")
    assert proc.returncode == 0
    assert proc.stdout.startswith('List of valid properties to query for the switch "--query-gpu":')
    assert '"clocks.current.sm" or "clocks.sm"' in proc.stdout and '"edpp_multiplier"' in proc.stdout


def test_flag_spellings(capsys):
    for argv in (["--query-gpu=index,name", "--format=csv,noheader", "--id=1"],
                 ["--query-gpu", "index,name", "--format", "csv,noheader", "-i", "1"],
                 ["--query-gpu=index,name", "--format=csv,noheader,nounits", "--id", "00000000:28:00.0"]):
        assert main(["--backend", "sim", *argv]) == 0
        assert capsys.readouterr().out == "1, NVIDIA H100 80GB HBM3\n"


def test_file_output_and_loop_ms(tmp_path):
    out = tmp_path / "log.csv"
    out.write_text("old contents that nvidia-smi -f would replace\n" * 10)
    proc = subprocess.Popen(gputop_cmd("--backend", "sim", "--query-gpu=timestamp,index",
                                       "--format=csv", "-lms", "50", "--filename", str(out)),
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_rows(out, 8 * 4 + 1)
    finally:
        proc.terminate()
    stdout, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0 and stdout == b""
    lines = out.read_text().splitlines()
    assert lines[0] == "timestamp, index" and "old" not in out.read_text()


def _wait_rows(path, n, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {n} lines")


def test_query_mode_never_imports_textual_and_starts_fast():
    code = ("import sys, time; t = time.perf_counter(); from gputop.commands.main import main; "
            "rc = main(['--backend', 'sim', '--query-gpu=index,power.draw', '--format=csv']); "
            "dt = time.perf_counter() - t; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'plotext')]; "
            "print(rc, bad, round(dt, 3), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    rc, rest = proc.stderr.split(" ", 1)
    assert rc == "0" and rest.startswith("[] "), proc.stderr
    # ~0.06 s on the idle 2-core dev box; generous here because CI machines are shared
    assert float(rest.split()[-1]) < 2.0, proc.stderr
