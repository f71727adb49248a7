"""A fake `amd-smi` on PATH printing the real captures of tests/fixtures/amd (see SOURCES.md there),
and the names of those captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.npu_smi import FakeTool, on_path
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "amd"

# `amd-smi static --json` of 8 MI300X (SR-IOV VFs), amd-smi 26.2.2, root: the gpu_data shape
STATIC_MI300X = "amd-smi-static-json_8xMI300X-SRIOV-VF_amdsmi-26.2.2_rocm-7.2.1_root.json"
VERSION_ROOT = "amd-smi-version-json_MI300X-host_amdsmi-26.2.2_rocm-7.2.1_root.json"
VERSION_NON_ROOT = ("amd-smi-version-json_MI300X-host_amdsmi-26.2.2_rocm-7.2.1_non-root_"
                    "FILE_ERROR.json")
# `amd-smi process --json` of 2 Radeon AI PRO R9700, amd-smi 26.2.1, sudo: the bare-list shape
PROCESS_R9700 = ("amd-smi-process-json_2xRadeon-AI-PRO-R9700_amdsmi-26.2.1_rocm-7.2.0_sudo_"
                 "indexid-57072628384.json")
# the first 40 lines of `amd-smi metric --json` on one R9700: cut off, not a whole document
METRIC_PARTIAL = ("amd-smi-metric-json_1of2xRadeon-AI-PRO-R9700_amdsmi-26.2.1_rocm-7.2.0_"
                  "PARTIAL-head-n-40_indexid-57072628384.txt")

# The first two lines amd-smi 26.2.0 printed for a user who may not open /dev/dri/card* (8 lines
# like the second in all), quoted in https://github.com/ROCm/amdsmi/issues/184: text that comes
# before the output, which tests put before a capture.
NO_ACCESS_BANNER = ("Permission needed to access required GPU device node(s):\n"
                    "  - /dev/dri/card0: Permission denied; owner=root(0):video(39);\n")


def capture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


class FakeAmdSmi(FakeTool):
    def __init__(self, folder: Path) -> None:
        super().__init__(folder, "amd-smi", FIXTURES,
                         "fake amd-smi: no rule of the test matches these arguments\n")


@pytest.fixture(name="fake_amd_smi")
def fake_amd_smi_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAmdSmi:
    return FakeAmdSmi(on_path(tmp_path, monkeypatch))
