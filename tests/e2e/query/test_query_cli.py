"""Query mode as a process: nvidia-smi's invalid-field message and exit 2, its help texts, `-f`
with `-lms`, and no Textual imported."""

from __future__ import annotations

import subprocess
import sys
import time

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


def test_help_query_flags_print_nvidia_smis_text():
    proc = run("--help-query-compute-apps")
    assert proc.returncode == 0
    assert proc.stdout == (FIX / "help-query-compute-apps_590.48.01_h100.txt").read_text()
    proc = run("--help-query-gpu")
    assert proc.returncode == 0
    assert proc.stdout.startswith('List of valid properties to query for the switch "--query-gpu":')
    assert '"clocks.current.sm" or "clocks.sm"' in proc.stdout and '"edpp_multiplier"' in proc.stdout


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
