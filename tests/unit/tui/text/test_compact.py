"""The compact text view's process list."""

from __future__ import annotations

from gputop.core.model import Device, Process
from gputop.tui.text.compact import device_line


def test_a_gone_process_is_named_gone_and_an_unknown_one_stays_a_question_mark() -> None:
    dev = Device(index=0, name="H100", processes=(
        Process(pid=5, gpu_memory_mib=10, gone=True), Process(pid=6, gpu_memory_mib=20)))
    line = device_line(dev, color=False)
    assert line.endswith("| ?:gone/5(10M) ?:?/6(20M)")
