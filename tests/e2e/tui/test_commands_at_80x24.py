"""At 80×24 over SSH, what runs must show (#27): on the C fake of libnvidia-ml (the real NVML
path, real processes), every process row of the dashboard's default view shows at least 30
characters of its command, starting with the program's name and its script."""

from __future__ import annotations

import re
import sys
import time

import pytest

from tests.support import cfake
from tests.support.tmux import Pane

pytestmark = pytest.mark.skipif(cfake.available() is not None, reason="needs gcc")

ARGS = ("--rank", "{rank}", "--config", "configs/llama-70b-long-context.yaml", "--seed", "1")


def settled(pane: Pane, timeout: float = 10.0) -> str:
    """The screen once two captures 0.1 s apart agree: tmux may show a frame half written."""
    deadline = time.monotonic() + timeout
    last = pane.screen()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = pane.screen()
        if now == last:
            return now
        last = now
    return last


def test_every_process_row_shows_its_program_and_script_at_80x24(tmp_path):
    (tmp_path / "train.py").write_text("import time\ntime.sleep(3600)\n")
    folder = cfake.build(tmp_path / "lib")
    # the interpreter by its full path, as a virtualenv or pyenv starts it
    argv = (sys.executable, "train.py", *ARGS)
    with cfake.Node(folder, gpus=4, procs_per_gpu=1, argv=argv, cwd=tmp_path) as node:
        env = {k: v for k, v in node.env().items() if k in ("LD_LIBRARY_PATH", "FAKENVML_CONFIG")}
        env.update(TERM="xterm-256color", XDG_CONFIG_HOME=str(tmp_path / "cfg"))
        pane = Pane(tmp_path, f"{sys.executable} -m gputop --backend nvml", env, size=(80, 24))
        try:
            pane.wait_for("train.py", 30)
            lines = settled(pane).splitlines()
        finally:
            pane.close()
    header = next(i for i, line in enumerate(lines) if "COMMAND" in line)
    at = lines[header].index("COMMAND")
    rows = [line[at:].rstrip() for line in lines[header + 1:] if re.match(r"\s*\d+\s+\d+\s", line)]
    program = sys.executable.rsplit("/", 1)[-1]
    assert rows, "\n".join(lines)  # as many as the cards leave room for: each one checked
    for text in rows:
        assert len(text) >= 30 and text.startswith(f"{program} train.py --rank"), text
