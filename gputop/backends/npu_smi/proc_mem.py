"""Parse `npu-smi info -t proc-mem`: the processes on an NPU and the memory each holds."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gputop.backends.npu_smi.kv import KV_LINE, norm_key
from gputop.backends.npu_smi.syntax import NpuSmiParseError, int_field, numbered_lines


@dataclass(frozen=True, slots=True)
class ProcMem:
    pid: int
    name: str | None
    memory_mb: int | None
    line: int = 0


_PROC_MEM = re.compile(
    r"Process id\s*:\s*(\d{1,18})\s+Process name\s*:\s*(.*?)\s+Process memory\(MB\)\s*:\s*(\S+)"
)


def parse_proc_mem(text: str) -> tuple[int, tuple[ProcMem, ...]]:
    """`npu-smi info -t proc-mem -i N`: (NPU id, processes)."""
    npu_id: int | None = None
    procs: list[ProcMem] = []
    for no, line in numbered_lines(text):
        m = _PROC_MEM.fullmatch(line)
        if m:
            memory = int_field(m.group(3), "process memory", no, line)
            name = m.group(2).strip()
            procs.append(ProcMem(int(m.group(1)), name or None, memory, no))
            continue
        kv = KV_LINE.fullmatch(line)
        if kv and norm_key(kv.group(1)) == "npu id":
            npu_id = int_field(kv.group(2).strip(), "NPU ID", no, line, allow_na=False)
        elif kv and norm_key(kv.group(1)) in ("chip id", "chip count"):
            continue
        else:
            raise NpuSmiParseError("unknown `-t proc-mem` line", no, line)
    if npu_id is None:
        raise NpuSmiParseError("no 'NPU ID' in `-t proc-mem` output")
    return npu_id, tuple(procs)
