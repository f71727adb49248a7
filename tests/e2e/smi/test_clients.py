"""Real programs that shell out to nvidia-smi, pointed at gputop's personality by a PATH shim.

Each client is the published package (installed by scripts/install-test-deps.sh into
tests/.clients/), run as its users run it; what it parses must be what `gputop snapshot --json`
holds for the same node: the simulator (its first sample is the same in every process) and the
npu-smi backend reading a real Ascend capture.

- nvidia-htop 1.2.0 reads the table (`nvidia-smi -i IDS`), row by row;
- gpuinfo 1.0.0a7 reads the table's memory and utilisation cells;
- nvgpu 0.10.0 reads `-L` and the table;
- aidockermon 0.10.3 reads `-q --display=COMPUTE`;
- nagios-nvidia-smi-plugin 0.4.0 reads `-q -x -i N` (it runs /usr/bin/nvidia-smi, which the
  test redirects to the shim in the plugin's process, as a site without the driver would);
- Debian's netdata python.d nvidia_smi collector streams `nvidia-smi -x -q -l 1`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support.paths import FIXTURES, ROOT, gputop_cmd

CLIENTS = ROOT / "tests" / ".clients"
PYTHON = CLIENTS / "venv" / "bin" / "python"
NETDATA = CLIENTS / "netdata" / "usr" / "lib" / "netdata"
ASCEND = FIXTURES / "npu-smi" / "info_910B2C-x2_npu-smi-23.0.2.1_1-process_trailing-spaces.txt"

REDIRECT = """import runpy, subprocess, sys
_Popen = subprocess.Popen
class Popen(_Popen):  # the plugin runs /usr/bin/nvidia-smi: this site's is the shim
    def __init__(self, args, *a, **k):
        if isinstance(args, (list, tuple)) and args and args[0] == "/usr/bin/nvidia-smi":
            args = [{shim!r}, *args[1:]]
        super().__init__(args, *a, **k)
subprocess.Popen = Popen
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


class Node:
    """A shim folder for one backend, and what `gputop snapshot --json` says of that node."""

    def __init__(self, folder: Path, backend: list[str]) -> None:
        self.folder = folder
        self.backend = backend
        self.bin = folder / "bin"
        self.bin.mkdir()
        self.pids = folder / "shim-pids"
        shim = self.bin / "nvidia-smi"
        args = " ".join(f"'{a}'" for a in gputop_cmd(*backend))
        # the shell's PID is gputop's after exec: the list of every personality this node ran
        shim.write_text(f'#!/bin/sh\necho $$ >> "{self.pids}"\nexec {args} nvidia-smi "$@"\n')
        shim.chmod(0o755)
        self.shim = shim
        out = subprocess.run(gputop_cmd(*backend, "snapshot", "--json"), capture_output=True,
                             text=True, cwd=ROOT, timeout=60, check=True).stdout
        self.snapshot = json.loads(out)
        self.devices = self.snapshot["devices"]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}"}

    def run(self, *argv: str | Path, timeout: float = 60) -> str:
        proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                              env=self.env(), cwd=self.folder, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode in (0, 1), proc.stderr  # a Nagios WARNING is 1
        return proc.stdout

    def python(self, code: str) -> str:
        return self.run(PYTHON, "-c", code)


@pytest.fixture
def sim(tmp_path: Path) -> Node:
    return Node(tmp_path, ["--backend", "sim"])


@pytest.fixture(params=["sim", "ascend"])
def node(request, tmp_path: Path) -> Node:
    if request.param == "sim":
        return Node(tmp_path, ["--backend", "sim"])
    fake = tmp_path / "npu-smi"  # prints the real capture for `npu-smi info`, fails otherwise
    fake.write_text(f"#!{sys.executable} -S\nimport sys\n"
                    f"if sys.argv[1:] != ['info']: sys.exit(2)\n"
                    f"sys.stdout.write(open({str(ASCEND)!r}).read())\n")
    fake.chmod(0o755)
    return Node(tmp_path, ["--backend", "npu-smi", "--npu-smi", str(fake)])


def _int(value: float | None) -> int:
    assert value is not None
    return int(round(value))


def test_nvidia_htop_reads_the_processes(node: Node) -> None:
    ids = ",".join(str(d["index"]) for d in node.devices[-2:])
    out = node.run(CLIENTS / "venv" / "bin" / "nvidia-htop.py", "-i", ids)
    rows = re.findall(r"^\|\s+(\d+)\s+(\d+)\s+.*?(\d+)MiB", out, re.M)
    want = [(str(d["index"]), str(p["pid"]), str(_int(p["gpu_memory_mib"])))
            for d in node.devices[-2:] for p in d["processes"]]
    assert rows == want and want


def test_gpuinfo_reads_utilisation_and_memory(node: Node) -> None:
    out = node.python("import gpuinfo.GPUInfo as G; print(G.gpu_usage())")
    assert out.strip() == str(([_int(d["utilization_gpu_pct"]) for d in node.devices],
                               [_int(d["memory_used_mib"]) for d in node.devices]))


def test_nvgpu_reads_the_list_and_the_table(node: Node) -> None:
    if node.snapshot["cuda_version"] is None:
        # nvgpu reads the table's CUDA version as a number to choose its layout: on a node
        # with no CUDA the personality says N/A, and nvgpu stops there (its own limit).
        out = subprocess.run([str(PYTHON), "-c", "import nvgpu; nvgpu.gpu_info()"],
                             capture_output=True, text=True, env=node.env(), timeout=60)
        assert "could not convert string to float: 'N/A'" in out.stderr
        return
    got = json.loads(node.python("import json, nvgpu; print(json.dumps(nvgpu.gpu_info()))"))
    assert [(g["index"], g["type"], g["uuid"], g["mem_used"], g["mem_total"]) for g in got] == [
        (str(d["index"]), d["name"], d["uuid"], _int(d["memory_used_mib"]),
         _int(d["memory_total_mib"])) for d in node.devices]


def test_aidockermon_reads_the_query_text(node: Node) -> None:
    got = json.loads(node.python(
        "import json; from aidockermon import aidockermon as a; print(json.dumps(a.nvidia_info()))"))
    driver = node.snapshot["driver_version"]
    assert got["driver_version"] == ".".join(driver.split(".")[:2])
    assert got["gpu_num"] == len(node.devices)
    if node.snapshot["cuda_version"] is not None:
        assert got["cuda_version"] == node.snapshot["cuda_version"]


def test_the_nagios_plugin_reads_the_xml_of_one_gpu(sim: Node) -> None:
    # (npu-smi info reports no memory utilisation, which the plugin cannot do without)
    node = sim
    dev = node.devices[-1]
    redirect = node.folder / "redirect.py"
    redirect.write_text(REDIRECT.format(shim=str(node.shim)))
    out = node.run(PYTHON, redirect, CLIENTS / "venv" / "bin" / "check_nvidiasmi.py",
                   "-d", str(dev["index"]), "-t", "200")
    perf = [p.split(";")[0] for p in out.split("|", 1)[1].split()]  # value;threshold
    assert perf == [f"gpuTemp={float(dev['temperature_c'])}",
                    f"gpuutil={float(dev['utilization_gpu_pct'])}%",
                    f"memutil={float(dev['utilization_memory_pct'])}%"]


def _netdata(node: Node, seconds: float) -> tuple[dict[str, list[int]], list[int]]:
    etc = node.folder / "netdata-etc"
    (etc / "python.d").mkdir(parents=True)
    (etc / "python.d.conf").write_text("enabled: yes\nnvidia_smi: yes\n")
    (etc / "python.d" / "nvidia_smi.conf").write_text(
        "local:\n  name: local\n  update_every: 1\n  loop_mode: yes\n  poll_seconds: 1\n")
    lib = node.folder / "netdata-lib"
    (lib / "lock").mkdir(parents=True)
    env = {**node.env(), "NETDATA_USER_CONFIG_DIR": str(etc),
           "NETDATA_STOCK_CONFIG_DIR": str(NETDATA / "conf.d"),
           "NETDATA_PLUGINS_DIR": str(NETDATA / "plugins.d"), "NETDATA_LIB_DIR": str(lib),
           "NETDATA_LOCK_DIR": str(lib / "lock")}
    plugin = subprocess.Popen([sys.executable, str(NETDATA / "plugins.d" / "python.d.plugin"),
                               "1", "nolock", "debug", "nvidia_smi"], env=env, cwd=node.folder,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        time.sleep(seconds)
    finally:
        os.killpg(plugin.pid, signal.SIGTERM)
        out, _ = plugin.communicate(timeout=30)
    sets: dict[str, list[int]] = {}
    for name, value in re.findall(r"^SET '(gpu0_\w+)' = (-?\d+)$", out, re.M):
        sets.setdefault(name, []).append(int(value))
    pids = [int(p) for p in node.pids.read_text().split()] if node.pids.exists() else []
    return sets, pids


def test_netdata_streams_the_xml_loop_and_leaves_nothing_running(node: Node) -> None:
    sets, pids = _netdata(node, 6.0)
    dev = node.devices[0]
    assert sets["gpu0_gpu_temp"][0] == _int(dev["temperature_c"])
    assert sets["gpu0_fb_memory_used"][0] == _int(dev["memory_used_mib"])
    free = dev["memory_free_mib"]
    if free is None:  # what --query-gpu's memory.free prints, too
        free = dev["memory_total_mib"] - dev["memory_used_mib"] - (dev["memory_reserved_mib"] or 0)
    assert sets["gpu0_fb_memory_free"][0] == _int(free)
    assert sets["gpu0_gpu_util"][0] == _int(dev["utilization_gpu_pct"])
    for proc in dev["processes"]:
        assert sets[f"gpu0_process_mem_{proc['pid']}"][0] == _int(proc["gpu_memory_mib"])
    assert len(sets["gpu0_gpu_temp"]) >= 2  # the -l loop answered after the check
    assert len(pids) >= 2  # the check (-x -q), then the loop (-x -q -l 1)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]  # the loop ended with its reader


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
