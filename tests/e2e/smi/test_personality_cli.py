"""The nvidia-smi personality as scripts run it: through a link named nvidia-smi, in loops that
end on a signal with whole reports, into files, and where no device answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import cfake
from tests.support.paths import FIXTURES, ROOT, gputop_cmd

ASCEND = FIXTURES / "npu-smi" / "info_910B2C-x2_npu-smi-23.0.2.1_1-process_trailing-spaces.txt"
GPUTOP = Path(sys.executable).parent / "gputop"  # the installed entry point


def _link(folder: Path) -> Path:
    """A folder whose nvidia-smi is a link to gputop, as an admin would make one."""
    bin_ = folder / "bin"
    bin_.mkdir()
    (bin_ / "nvidia-smi").symlink_to(GPUTOP)
    return bin_


def _fake_npu_smi(folder: Path) -> Path:
    fake = folder / "npu-smi"
    fake.write_text(f"#!{sys.executable} -S\nimport sys\n"
                    f"if sys.argv[1:] != ['info']: sys.exit(2)\n"
                    f"sys.stdout.write(open({str(ASCEND)!r}).read())\n")
    fake.chmod(0o755)
    return fake


def test_a_link_named_nvidia_smi_answers_from_the_ascend_node(tmp_path: Path) -> None:
    bin_ = _link(tmp_path)
    _fake_npu_smi(bin_)  # `auto`: no NVML here, then npu-smi on PATH
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, "GPU 0: Ascend 910B2C (UUID: N/A)\nGPU 1: Ascend 910B2C (UUID: N/A)\n", "")


@pytest.mark.skipif(cfake.available() is not None, reason="needs gcc (install-test-deps.sh)")
def test_a_link_named_nvidia_smi_answers_from_nvml(tmp_path: Path) -> None:
    """The real NVML path (nvidia-ml-py over the C fake of libnvidia-ml, real PIDs)."""
    bin_ = _link(tmp_path)
    cfake.build(tmp_path / "lib")
    with cfake.Node(tmp_path / "lib", gpus=2, procs_per_gpu=1) as node:
        env = node.env(PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
        table = subprocess.run(["nvidia-smi"], capture_output=True, text=True, env=env,
                               timeout=60)
        xml = subprocess.run(["nvidia-smi", "-q", "-x", "-i", "1"], capture_output=True,
                             text=True, env=env, timeout=60)
    assert table.returncode == 0 and xml.returncode == 0, table.stderr + xml.stderr
    for pid in node.pids:
        assert f" {pid} " in table.stdout  # the processes box lists the real PIDs
    assert xml.stdout.count("<gpu id=") == 1 and "<attached_gpus>2</attached_gpus>" in xml.stdout
    assert f"<pid>{node.pids[1]}</pid>" in xml.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_loop_ends_on_a_signal_with_whole_reports(tmp_path: Path, sig: int) -> None:
    log = tmp_path / "stream.xml"
    with open(log, "w") as out:
        proc = subprocess.Popen(gputop_cmd("--backend", "sim", "nvidia-smi", "-q", "-x", "-lms",
                                           "200"),
                                stdout=out, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        time.sleep(2.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    text = log.read_text()
    assert (proc.returncode, err) == (0, "")
    assert text.count("<?xml") >= 3  # several reports, every one whole
    assert text.count("<?xml") == text.count("</nvidia_smi_log>\n")
    assert text.endswith("</nvidia_smi_log>\n")


def test_reports_go_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "smi.txt"
    proc = subprocess.run(gputop_cmd("--backend", "sim", "nvidia-smi", "-q", "-d", "TEMPERATURE",
                                     "-f", str(target)),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    text = target.read_text()
    assert text.count("GPU Current Temp") == 8 and "FB Memory Usage" not in text


def test_a_file_that_cannot_be_written_is_nvidia_smis_error(tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "smi.txt"
    proc = subprocess.run(gputop_cmd("--backend", "sim", "nvidia-smi", "-f", str(target)),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stdout) == (255, f"Failed to create log file {target}\n\n")


def test_without_a_device_the_link_fails_fast_and_prints_nothing(tmp_path: Path) -> None:
    bin_ = _link(tmp_path)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}/usr/bin:/bin"}
    started = time.monotonic()
    proc = subprocess.run(["nvidia-smi"], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert time.monotonic() - started < 10
    assert proc.returncode == 12 and proc.stdout == ""  # nvidia-smi's code: no libnvidia-ml
    assert proc.stderr.startswith("gputop: no GPU or NPU answered")
