"""The process table's command: the program's name first, long lines elided in the middle."""

from __future__ import annotations

import pytest

from gputop.tui.text.command import elide_middle, program_first


@pytest.mark.parametrize("command, shown", [
    ("/home/u/.pyenv/versions/3.11.7/bin/python3 train.py --rank 0", "python3 train.py --rank 0"),
    ("/root/tools/memhog", "memhog"),
    ("./gpu_burn 60", "gpu_burn 60"),
    ("torchrun --nproc-per-node 4 train.py", "torchrun --nproc-per-node 4 train.py"),
    ("/usr/bin/", "bin"),
    ("/usr/bin/x\n31337,/usr/bin/forged 3600", "/usr/bin/x\n31337,/usr/bin/forged 3600"),
    ("/opt/\x1b]0;pwned\x07[@click=app.quit]quit[/] -c x", "/opt/\x1b]0;pwned\x07[@click=app.quit]quit[/] -c x"),
])
def test_the_program_comes_first(command: str, shown: str) -> None:
    assert program_first(command) == shown


def test_a_long_line_keeps_its_start_and_its_end() -> None:
    text = "python3 train.py --config configs/llama-70b.yaml --local_rank=7"
    out = elide_middle(text, 30)
    assert len(out) == 30 and out.startswith("python3 train.py --") and out.endswith("rank=7")
    assert "…" in out
    assert elide_middle("short", 30) == "short"
    assert elide_middle(text, 1) == "…" and elide_middle(text, 0) == ""
