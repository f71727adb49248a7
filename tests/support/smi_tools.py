"""What the tests of the vendor-tool backends (amd-smi, rocm-smi, xpu-smi) share: gputop run as a
command, a wait on a condition, and each tool's fake on PATH with the answers of its real
captures, so one test checks a bound (a hang, a flood, a death) of every tool alike."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gputop.backends.amd.rocm.backend import ARGS as ROCM_ARGS
from gputop.backends.amd.rocm.backend import RocmSmiBackend
from gputop.backends.amd.smi.backend import AmdSmiBackend
from gputop.backends.base import BackendOptions
from gputop.backends.intel.xpu.backend import XpuSmiBackend
from gputop.backends.tool_backend import ToolBackend
from tests.support.amd_smi import METRIC_PARTIAL, PROCESS_R9700, STATIC_MI300X, FakeAmdSmi
from tests.support.npu_smi import FakeTool, on_path
from tests.support.paths import ROOT, gputop_cmd
from tests.support.procs import alive
from tests.support.rocm_smi import CALL, MI100, FakeRocmSmi
from tests.support.xpu_smi import DISCOVERY, DISCOVERY_A310, DUMP, DUMP_A310, PS, FakeXpuSmi

Rules = list[tuple[str, dict]]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``gputop ARGS…`` to its end (60 s at most), ``env`` added to this environment."""
    return subprocess.run(gputop_cmd(*args), capture_output=True, text=True, timeout=60,
                          cwd=ROOT, stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def wait_for(cond: Callable[[], object], timeout: float = 5.0) -> bool:
    """Return whether ``cond()`` came true within ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return bool(cond())


def left_running(fake: FakeTool) -> list[int]:
    """Return the PIDs of the fake's runs still alive."""
    return [p for p in fake.pids() if alive(p)]


@dataclass(frozen=True)
class Tool:
    """One vendor tool as its tests drive it: the fake on PATH, the call open() runs first (its
    fake's pattern and its arguments as gputop's messages print them), answers that work, and
    the environment setting of its timeout."""

    name: str  # the executable and the backend's name
    fake: Callable[[Path], FakeTool]
    first: str  # the fake's pattern for open()'s first call
    first_args: str  # that call's arguments, as messages name it
    first_file: str  # a capture that answers it
    answers: Rules  # every call answered from the captures
    timeout_env: str
    backend: type[ToolBackend]
    readings: str  # the call a round reads the readings with (its pattern and its arguments)
    processes: str | None  # the call that lists processes, where the tool has one
    first_name: str  # the name the first call gives the first GPU

    def open_backend(self, **kw: Any) -> ToolBackend:
        """Open this tool's backend object against the fake on PATH."""
        backend = self.backend(BackendOptions(), **kw)
        backend.open()
        return backend

    def on_path(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTool:
        """Put this tool's fake first on PATH."""
        return self.fake(on_path(tmp_path, monkeypatch))


AMD_SMI = Tool("amd-smi", FakeAmdSmi, "static --json", "static --json", STATIC_MI300X,
               [("static --json", {"file": STATIC_MI300X}),
                ("metric --json", {"file": METRIC_PARTIAL}),
                ("process --json", {"file": PROCESS_R9700})],
               "GPUTOP_AMD_SMI_TIMEOUT", AmdSmiBackend, "metric --json", "process --json",
               "AMD Instinct MI300X")
ROCM_SMI = Tool("rocm-smi", FakeRocmSmi, CALL, " ".join(ROCM_ARGS), MI100,
                [(CALL, {"file": MI100})], "GPUTOP_ROCM_SMI_TIMEOUT", RocmSmiBackend,
                CALL, None, "Arcturus GL-XL [Instinct MI100]")
XPU_SMI = Tool("xpu-smi", FakeXpuSmi, DISCOVERY, DISCOVERY, DISCOVERY_A310,
               [(DISCOVERY, {"file": DISCOVERY_A310}), (DUMP, {"file": DUMP_A310}),
                ("ps", {"file": PS})],
               "GPUTOP_XPU_SMI_TIMEOUT", XpuSmiBackend, DUMP, "ps",
               "Intel(R) Arc(TM) A310 LP Graphics")
TOOLS = [pytest.param(t, id=t.name) for t in (AMD_SMI, ROCM_SMI, XPU_SMI)]
WITH_PROCESSES = [pytest.param(t, id=t.name) for t in (AMD_SMI, XPU_SMI)]
