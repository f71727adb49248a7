"""The dashboard in a real terminal, as users run it: tmux on its own socket (`-L`), read back with
`capture-pane -e`, the tmux server and gputop stopped by PID. `.ci/run` installs tmux."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

SGR = re.compile(r"\x1b\[([0-9;:]*)m")


def same_colour_cells(screen: str) -> list[str]:
    """Visible characters whose SGR foreground equals their background."""
    found = []
    for line in screen.splitlines():
        fg = bg = None
        pos = 0
        for m in list(SGR.finditer(line)) + [None]:
            text = line[pos:m.start()] if m else line[pos:]
            if text.strip() and fg is not None and fg == bg:
                found.append(f"{text.strip()[:20]!r} fg=bg={fg}")
            if m is None:
                break
            pos = m.end()
            codes = m.group(1).split(";") if m.group(1) else ["0"]
            i = 0
            while i < len(codes):
                c = codes[i]
                if c in ("0", ""):
                    fg = bg = None
                elif c in ("38", "48") and i + 1 < len(codes):
                    n = 3 if codes[i + 1] == "5" else 5
                    value = ";".join(codes[i + 1:i + n])
                    fg, bg = (value, bg) if c == "38" else (fg, value)
                    i += n - 1
                elif c.isdigit() and (30 <= int(c) <= 37 or 90 <= int(c) <= 97):
                    fg = f"5;{int(c) - 30 if int(c) < 90 else int(c) - 82}"
                elif c.isdigit() and (40 <= int(c) <= 47 or 100 <= int(c) <= 107):
                    bg = f"5;{int(c) - 40 if int(c) < 100 else int(c) - 92}"
                elif c == "39":
                    fg = None
                elif c == "49":
                    bg = None
                i += 1
    return found


def test_no_color_draws_every_character_visibly(pane):
    p = pane(env={"NO_COLOR": "1"})
    p.wait_for("PID")
    time.sleep(1.5)  # a couple of samples drawn
    screen = p.screen(escapes=True)
    assert "SIMULATED" in screen and "H100" in screen
    assert same_colour_cells(screen) == []
    assert not re.search(r"\x1b\[[0-9;]*(38|48);[25];", screen), "NO_COLOR still sets colours"


def test_ctrl_c_quits_at_once_with_status_0(pane):
    p = pane()
    p.wait_for("PID")
    p.tmux("send-keys", "-t", "t", "C-c")
    assert p.exit_status(timeout=3) == 0
    assert p.flag("alternate_on") == "0"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_restores_the_terminal_and_exits_128_plus_signal(pane, sig):
    p = pane()
    p.wait_for("PID")
    assert p.flag("alternate_on") == "1"
    os.kill(p.gputop_pid(), sig)
    assert p.exit_status(timeout=5) == 128 + sig
    assert p.flag("alternate_on") == "0"  # back on the normal screen
    assert p.flag("cursor_flag") == "1"  # the cursor shows again
    assert p.flag("mouse_any_flag") == "0"


def test_eight_gpus_of_seven_mig_instances_read_whole_at_80x24_in_a_real_terminal(pane):
    p = pane("--scenario", "mig-dense", size=(80, 24))
    p.wait_for("PID")
    time.sleep(1.5)
    lines = p.screen().splitlines()
    assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
    gpu_lines = [line for line in lines if re.match(r" [0-7] H100", line)]
    assert len(gpu_lines) == 8
    for line in gpu_lines:  # count, busiest and fullest on each GPU's own line, whole
        assert re.search(r" 7 MIG · SM \d+% 1g\.10gb · mem \d+% 1g\.10gb$", line.rstrip()), line
        assert "N/A%" not in line and " 0%" not in line
    assert "GI/CI" in "\n".join(lines)


def test_the_dashboard_and_its_history_plot_map_neither_libcrypto_nor_plotext(pane):
    """ssl (imported by asyncio for TLS the dashboard never opens) and hashlib (the advisor's
    journal names) both map libcrypto, about 4 MB of the dashboard's RSS, for nothing; plotext
    (its C++ kernel, libstdc++ and hashlib again) took 11 MB for the history plot."""
    p = pane()
    p.wait_for("PID")
    p.tmux("send-keys", "-t", "t", "h")
    p.wait_for("history")
    time.sleep(1.5)  # sampled, the plot drawn, and the advisor's leftover-journal check done
    with open(f"/proc/{p.gputop_pid()}/maps") as fh:
        mapped = {line.split()[-1] for line in fh if "/" in line}
    assert not [path for path in mapped if "libcrypto" in path or "libssl" in path]
    assert not [path for path in mapped if "plotext" in path]

