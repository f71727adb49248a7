"""Query mode on the npu-smi backend: the same CSV from Ascend readings (fake npu-smi on PATH)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT, gputop_cmd

CAPTURE = (ROOT / "tests" / "fixtures" / "npu-smi"
           / "info_910B4-x8_npu-smi-25.0.rc1.1_no-processes-per-NPU_indexid-44432403459.txt")


def test_query_gpu_on_ascend(tmp_path):
    fake = tmp_path / "npu-smi"  # prints the real capture for `npu-smi info`, fails otherwise
    fake.write_text(f"#!{sys.executable} -S\nimport sys\n"
                    f"if sys.argv[1:] != ['info']: sys.exit(2)\n"
                    f"sys.stdout.write(open({str(CAPTURE)!r}).read())\n")
    fake.chmod(0o755)
    proc = subprocess.run(gputop_cmd("--backend", "npu-smi", "--npu-smi", str(fake),
                                     "--query-gpu=index,name,pci.bus_id,"
                                     "power.draw,temperature.gpu,memory.total,memory.used,"
                                     "utilization.gpu,clocks.sm,ecc.mode.current", "--format=csv"),
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ("index, name, pci.bus_id, power.draw [W], temperature.gpu, "
                        "memory.total [MiB], memory.used [MiB], utilization.gpu [%], "
                        "clocks.current.sm [MHz], ecc.mode.current")
    assert len(lines) == 9
    for i, row in enumerate(lines[1:]):
        cells = row.split(", ")
        assert cells[0] == str(i) and cells[1].startswith("Ascend")
        assert cells[3].endswith(" W") and cells[5].endswith(" MiB")
        assert cells[9] == "[N/A]"  # npu-smi info does not say: never a made-up value
