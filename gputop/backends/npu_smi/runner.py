"""Running npu-smi: the shared, bounded tool runner (gputop/backends/smi_runner.py) with npu-smi's
name, its ``--npu-smi`` option and its timeout."""

from __future__ import annotations

import os

from gputop.backends.smi_runner import SmiRunner, find_smi

TOOL = "npu-smi"
DEFAULT_TIMEOUT_S = 15.0  # a full `npu-smi info` on 8 NPUs can take several seconds
TIMEOUT_ENV = "GPUTOP_NPU_SMI_TIMEOUT"


def find_npu_smi(path: str | None) -> str:
    """Return the executable to run: ``path`` if given (a name is looked up on PATH), else
    PATH's npu-smi."""
    return find_smi(TOOL, path, "--npu-smi")


def timeout_from_env(default: float = DEFAULT_TIMEOUT_S) -> float:
    """``GPUTOP_NPU_SMI_TIMEOUT``, checked against its documented range (gputop.core.bounds)."""
    from gputop.core.bounds import NPU_SMI_TIMEOUT

    assert NPU_SMI_TIMEOUT.name == TIMEOUT_ENV
    return float(NPU_SMI_TIMEOUT.from_env(os.environ, default))


class Runner(SmiRunner):
    """Runs ``npu-smi ARGS…`` and returns its standard output as text."""

    def __init__(self, executable: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__(TOOL, executable, timeout_s)
