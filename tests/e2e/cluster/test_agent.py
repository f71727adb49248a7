"""`gputop agent`: a hello, then one gputop/1 snapshot per interval, until stdin or stdout closes."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from gputop.cluster.protocol import AgentDecoder, Checked, Hello, build_snapshot, decode_snapshot
from gputop.core.model import snapshot_from_json
from tests.support.paths import ROOT

AGENT = [sys.executable, "-m", "gputop", "agent", "--backend", "sim"]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*AGENT, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)


def test_hello_then_snapshots_with_hints_until_stdin_closes():
    t0 = time.monotonic()
    # The simulator's clock runs 30x: 40 one-second samples in about 1.3 s.
    proc = start("--interval", "1", "--sim-speed", "30", "--scenario", "dataloader-bound")
    hello = json.loads(proc.stdout.readline())
    first_line_s = time.monotonic() - t0
    assert hello["hello"] == "gputop" and hello["schema"] == "gputop/1"
    assert hello["backend"] == "sim" and hello["version"] and hello["host"]
    snaps = [decode_snapshot(json.loads(proc.stdout.readline())) for _ in range(40)]
    assert all(len(s.devices) == 8 for s in snaps)
    times = [s.time for s in snaps]
    assert times == sorted(times) and 0.9 < (times[-1] - times[0]) / 39 < 1.5
    # The default analyzer runs in the agent: history-based hints travel with the stream.
    assert any(h.code == "input-bound" for s in snaps for h in s.hints)
    proc.stdin.close()  # the ssh session went away
    assert proc.wait(5) == 0
    assert proc.stderr.read() == b""
    assert first_line_s < 3.0  # a remote agent must start fast (about 0.15 s here, unloaded)


def test_mig_instances_travel_from_the_agent_to_the_cluster_view():
    proc = subprocess.run([*AGENT, "--scenario", "mig", "--interval", "0.05", "--count", "2",
                           "--ignore-stdin"], capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=30, cwd=ROOT, check=True)
    lines = proc.stdout.splitlines()
    decoder = AgentDecoder()
    assert isinstance(decoder.feed(lines[0]), Hello)
    for line in lines[1:]:
        event = decoder.feed(line)
        assert isinstance(event, Checked)
        snap = build_snapshot(event.doc)
        assert snap == snapshot_from_json(json.loads(line))  # nothing lost or changed on the way
        gpu = snap.devices[2]
        assert gpu.mig_mode == "enabled" and gpu.utilization_gpu_pct is None
        assert [(m.profile, m.gpu_instance_id) for m in gpu.mig_instances] == \
            [("3g.40gb", 2), ("2g.20gb", 3), ("2g.20gb", 4)]
        assert all(m.uuid.startswith("MIG-") and m.processes and m.saturation.source == "sim"
                   for m in gpu.mig_instances)
        assert {p.gpu_instance_id for p in gpu.processes} == {2, 3, 4}
        assert sum(len(d.mig_instances) for d in snap.devices) == 22


def test_exits_quietly_when_stdout_closes():
    proc = start("--interval", "0.05")
    proc.stdout.readline()
    proc.stdout.close()  # the reader is gone: the next write gets EPIPE
    assert proc.wait(5) == 0
    assert proc.stderr.read() == b""
    proc.stdin.close()


def test_count_and_ignore_stdin():
    proc = subprocess.run([*AGENT, "--interval", "0.05", "--count", "3", "--ignore-stdin"],
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=30, cwd=ROOT)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 4  # hello + 3


PROBE = """
import atexit, sys
def report():
    heavy = sorted(m for m in ("textual", "rich", "plotext") if m in sys.modules)
    sys.stderr.write("HEAVY=" + (",".join(heavy) or "-") + "\\n")
atexit.register(report)
from gputop.commands.main import main
sys.exit(main({argv!r}))
"""


def test_agent_and_cluster_once_never_import_textual():
    for argv in (["agent", "--backend", "sim", "--count", "1", "--ignore-stdin"],
                 ["cluster", "--once", "--json", "--connect-timeout", "1",
                  "--ssh-config", "/dev/null", "127.0.0.1"]):
        r = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                           text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
        assert "HEAVY=-" in r.stderr, (argv, r.stderr)


def test_a_full_stdout_is_one_line_and_exit_1():
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([*AGENT, "--interval", "0.05", "--count", "2", "--ignore-stdin"],
                              stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              timeout=30, cwd=ROOT)
    assert proc.returncode == 1
    assert proc.stderr == b"gputop agent: cannot write to stdout: No space left on device\n"
