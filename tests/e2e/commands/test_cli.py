import json
import subprocess
import sys

from gputop import __version__
from tests.support.paths import gputop_cmd


def run(*args, **kw):
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, timeout=60, **kw)


def test_version_and_help():
    assert run("--version").stdout.strip() == f"gputop {__version__}"
    out = run("--help").stdout
    assert "snapshot" in out and "--backend" in out


def test_text_snapshot_says_simulated():
    r = run("snapshot", "--backend", "sim")
    assert r.returncode == 0
    assert "SIMULATED" in r.stdout.splitlines()[0]
    assert len(r.stdout.splitlines()) >= 9 and "\x1b[" not in r.stdout  # no colour into a pipe


def test_select_devices_by_index_uuid_and_bus_id():
    doc = json.loads(run("snapshot", "--json", "--backend", "sim").stdout)
    uuid5 = doc["devices"][5]["uuid"]
    bus2 = doc["devices"][2]["pci_bus_id"]
    ids = f"7,{uuid5[:12]},{bus2.split(':', 1)[1]}"
    picked = json.loads(run("snapshot", "--json", "--backend", "sim", "-i", ids).stdout)
    assert [d["index"] for d in picked["devices"]] == [7, 5, 2]


def test_bad_input_is_one_line_and_non_zero():
    cases = [
        ("snapshot", "--backend", "sim", "-i", "12"),
        ("snapshot", "--backend", "sim", "--scenario", "nope"),
        ("snapshot", "--backend", "sim", "--window", "-1"),
        ("snapshot", "--backend", "sim", "--interval", "0"),
        ("snapshot", "--backend", "bogus"),
    ]
    for args in cases:
        r = run(*args)
        assert r.returncode != 0, args
        assert "Traceback" not in r.stderr, args
        assert len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def test_snapshot_piped_into_a_closed_reader_is_quiet():
    p = subprocess.run(f"{sys.executable} -m gputop snapshot --backend sim --scenario dense-16 | head -1",
                       shell=True, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in p.stderr


def test_a_full_device_on_stdout_is_one_line_and_exit_1():
    for args in (["--json"], [], ["--json", "--window", "2", "--sim-speed", "100"]):
        with open("/dev/full", "w") as full:
            p = subprocess.run(gputop_cmd("snapshot", "--backend", "sim", *args), stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 1, (args, p.stderr)
        assert p.stderr == "gputop: cannot write to standard output: No space left on device\n"
