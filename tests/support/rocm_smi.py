"""A fake `rocm-smi` on PATH printing the real captures of tests/fixtures/amd (see SOURCES.md
there), and the names of those captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.amd_smi import FIXTURES
from tests.support.npu_smi import FakeTool, on_path

CALL = "*--json"  # the fake's pattern for Telegraf's flags, as the backend's ARGS runs them

# `rocm-smi <Telegraf's flags> --json`, each from Telegraf's amd_rocm_smi test data
MI100 = "rocm-smi-json_6xMI100_rocm-5.7.1_driver-6.2.4_telegraf-flags.json"
RX6700XT_430 = "rocm-smi-json_1xRX6700XT_rocm-4.3.0_telegraf-flags.json"
RX6700XT_571 = "rocm-smi-json_1xRX6700XT_rocm-5.7.1_telegraf-flags.json"
RX6700XT_612 = "rocm-smi-json_1xRX6700XT_rocm-6.1.2_telegraf-flags.json"
VEGA10 = "rocm-smi-json_1xVega10-XT_driver-5.9.25_telegraf-flags.json"
MI50 = "rocm-smi-json_1xMI50-32GB-Vega20_driver-5.9.17_telegraf-flags.json"
ALL = (MI100, RX6700XT_430, RX6700XT_571, RX6700XT_612, VEGA10, MI50)


class FakeRocmSmi(FakeTool):
    def __init__(self, folder: Path) -> None:
        super().__init__(folder, "rocm-smi", FIXTURES,
                         "fake rocm-smi: no rule of the test matches these arguments\n")


@pytest.fixture(name="fake_rocm_smi")
def fake_rocm_smi_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeRocmSmi:
    return FakeRocmSmi(on_path(tmp_path, monkeypatch))
