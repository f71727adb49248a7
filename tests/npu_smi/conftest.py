"""Fixtures for the npu-smi backend tests (the fake executable lives in npu_smi_helpers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from npu_smi_helpers import FakeNpuSmi


@pytest.fixture
def fake_npu_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNpuSmi:
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = FakeNpuSmi(folder)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return fake
