"""A fake `xpu-smi` on PATH printing the real captures of tests/fixtures/intel (see SOURCES.md
there), and the names of those captures.

The first line of every xpu-smi capture is the command as its source showed it; the output starts
on line 2. The fake prints a capture from its second line on (a copy written beside the fake with
that first line cut off, nothing else changed); the pure parser tests do the same with
:func:`output_of`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.npu_smi import FakeTool, on_path
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "intel"

# the calls gputop runs (gputop/backends/intel/xpu/mapping.py), as the fake's rules match them
DISCOVERY = "discovery --dump 1,2,6,8,11,16"
DUMP = "dump -d -1 -m 0,1,2,3,4,18 -i 1 -n 1"

# `discovery --dump 1,2,6,16` of one Arc A310 LP: Memory Physical Size "N/A" (beszel PR 755)
DISCOVERY_A310 = "xpu-smi-v1_discovery--dump-csv_1xArc-A310-LP_memory-NA_beszel-pr-755.txt"
# `discovery --dump 1,2,3,6` of two Flex 170 (0x56c0), the user guide
DISCOVERY_FLEX = "xpu-smi-v1_discovery--dump-csv_2xFlex170-0x56c0_user-guide.txt"
# `dump -d "-1" -m 1,2,5,18` of the same A310: 4 rows
DUMP_A310 = "xpu-smi-v1_dump-csv_1xArc-A310-LP_m1-2-5-18_beszel-pr-755.txt"
# `dump -d 0 -m 0,1,2,3` of a Flex 170: utilization cells of spaces, temperature cells empty
DUMP_FLEX_BLANK = "xpu-smi-v1_dump-csv_1xFlex170_blank-util-and-temp_issue-69.txt"
# `dump -d 0 -m 0,1,2 -i 1 -n 5`, the user guide: id 0 under its older header
DUMP_GUIDE = "xpu-smi-v1_dump-csv_m0-1-2_n5_user-guide.txt"
# `dump -d 0,1,2,3,4,5 -m 0,1,2,3,4,5` of six Max 1550, xpu-smi 1.2.39: utilization "N/A"
DUMP_MAX1550 = "xpu-smi-v1.2.39_dump-csv_6xMax1550_util-NA_issue-98.txt"
DUMP_HELP = "xpu-smi-v1_dump-h_help-metric-ids_user-guide.txt"
DISCOVERY_HELP = "xpu-smi-v1_discovery-h_help-dump-property-ids_user-guide.txt"
PS = "xpu-smi-v1_ps_2-devices_user-guide.txt"
PS_HELP = "xpu-smi-v1_ps-h_help-MEM-in-kB_user-guide.txt"
V2_TABLE = "xpu-smi-v2.0_default-table_1xArc-B580_README.txt"


def capture(name: str) -> str:
    """A capture whole, its first line (the command) included."""
    return (FIXTURES / name).read_text(encoding="utf-8")


def output_of(name: str) -> str:
    """What the tool printed: the capture from its second line on."""
    return capture(name).split("\n", 1)[1]


def all_captures() -> list[str]:
    return sorted(p.name for p in FIXTURES.glob("xpu-smi-*"))


class FakeXpuSmi(FakeTool):
    def __init__(self, folder: Path) -> None:
        self.outputs = folder / "outputs"
        self.outputs.mkdir(exist_ok=True)
        super().__init__(folder, "xpu-smi", self.outputs,
                         "fake xpu-smi: no rule of the test matches these arguments\n")

    def set(self, rules: list[tuple[str, dict]]) -> None:
        """As FakeTool.set; a ``file`` is printed from its second line on."""
        for _, act in rules:
            if "file" in act:
                (self.outputs / act["file"]).write_text(output_of(act["file"]),
                                                        encoding="utf-8")
        super().set(rules)


@pytest.fixture(name="fake_xpu_smi")
def fake_xpu_smi_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeXpuSmi:
    return FakeXpuSmi(on_path(tmp_path, monkeypatch))
