"""MIG in the dashboard: instances nested under their GPU at every size, the parent's [N/A]
utilization never drawn as 0%, the process table's GI/CI column only while some GPU has MIG on."""

from __future__ import annotations

import re
from contextlib import asynccontextmanager

import pytest

from gputop.core.model import Device, MigInstance, Process, Saturation, Snapshot
from gputop.tui.app import GputopApp
from gputop.tui.text.mig import chip, chips_text, summary_text
from gputop.tui.widgets.dashboard import choose_layout
from gputop.tui.widgets.gpu import GpuCard
from gputop.tui.widgets.processes import build_rows
from tests.support.demo import advance, demo_backend
from tests.support.tui import screen_lines


def inst(gi: int, profile: str = "1g.10gb", sm: float | None = 50.0, used: float = 5000.0,
         total: float = 9984.0, procs: tuple[Process, ...] = ()) -> MigInstance:
    return MigInstance(gpu_instance_id=gi, compute_instance_id=0, profile=profile,
                       uuid=f"MIG-{gi}", sm_count=16, memory_total_mib=total,
                       memory_used_mib=used, saturation=Saturation(source="gpm", sm_active_pct=sm),
                       processes=procs)


def mig_device(index: int = 0, instances: tuple[MigInstance, ...] = ()) -> Device:
    return Device(index=index, name="NVIDIA H100 80GB HBM3", memory_total_mib=81559,
                  memory_used_mib=sum(i.memory_used_mib for i in instances),
                  utilization_gpu_pct=None, power_draw_w=300.0, power_limit_w=700.0,
                  temperature_c=50, clock_sm_mhz=1980, clock_sm_max_mhz=1980,
                  clock_event_reasons=("gpu_idle",), mig_mode="enabled",
                  mig_instances=instances,
                  processes=tuple(p for i in instances for p in i.processes))


SEVEN = tuple(inst(gi, sm=10.0 * k, used=1000.0 + 1000 * k)
              for k, gi in enumerate((7, 8, 9, 10, 11, 12, 13)))


# ------------------------------------------------------------------------------ pure text

def test_chips_show_every_instance_in_order_when_they_fit():
    text = chips_text(SEVEN, 200)
    assert text.startswith("7 MIG SM/mem%  ")
    assert text.split("  ")[1:] == [chip(i) for i in SEVEN]


def test_short_chips_put_the_busiest_and_fullest_first_and_count_the_rest():
    hot = inst(3, "3g.40gb", sm=97.0, used=100.0, total=40320.0)
    full = inst(5, "2g.20gb", sm=5.0, used=19900.0, total=20096.0)
    rest = tuple(inst(gi, sm=1.0, used=10.0) for gi in (9, 10, 11))
    text = chips_text(rest + (full, hot), 60)
    assert len(text) <= 60
    words = text.split("  ")
    assert words[1] == "3g.40gb 97/0" and words[2] == "2g.20gb 5/99"
    assert words[-1] == f"+{5 - (len(words) - 2)}"  # the count of what was left out


@pytest.mark.parametrize("width", range(0, 70))
def test_chips_and_summary_are_whole_words_at_every_width(width):
    for text in (chips_text(SEVEN, width), summary_text(SEVEN, width)):
        assert len(text) <= width
        if text:  # nothing cut: every chip is complete, the summary a known phrase
            assert not text.endswith(("…", "/", " ")), text
    chips = chips_text(SEVEN, width)
    for word in chips.split("  ")[1:]:
        assert word in {chip(i) for i in SEVEN} or re.fullmatch(r"\+\d", word), word


def test_summary_names_count_busiest_and_fullest_and_drops_details_first():
    assert summary_text(SEVEN, 80) == "7 MIG · SM 60% 1g.10gb GI 13 · mem 70% 1g.10gb GI 13"
    assert summary_text(SEVEN, 40) == "7 MIG · SM 60% 1g.10gb · mem 70% 1g.10gb"
    assert summary_text(SEVEN, 25) == "7 MIG · SM 60% 1g.10gb"
    assert summary_text(SEVEN, 6) == "7 MIG"
    assert summary_text(SEVEN, 4) == ""


def test_unmeasured_instances_read_as_missing_never_zero():
    blind = (inst(1, sm=None), inst(2, sm=None))
    assert chip(blind[0]) == "1g.10gb -/50"
    assert summary_text(blind, 80) == "2 MIG · mem 50% 1g.10gb GI 1"


# ------------------------------------------------------------------------------ layout

def test_without_mig_the_layout_is_what_it_was():
    assert choose_layout(120, 35, 8, False) == (False, 2, 19, "lines")
    assert choose_layout(80, 20, 8, False) == (True, 1, 8, "lines")
    assert choose_layout(80, 20, 16, False) == (True, 2, 8, "inline")


def test_mig_layout_prefers_every_instance_on_its_own_line_then_chips_then_a_summary():
    seven = (7,) * 8
    assert choose_layout(140, 80, 8, False, seven) == (False, 2, 4 * 11 + 3, "lines")
    assert choose_layout(90, 75, 8, False, seven) == (True, 1, 64, "lines")  # one card a row
    assert choose_layout(120, 35, 8, False, seven) == (True, 1, 16, "chips")
    assert choose_layout(80, 20, 8, False, seven) == (True, 1, 8, "inline")
    # whole GPUs take no instance lines: only the rows holding MIG GPUs grow
    assert choose_layout(140, 60, 4, False, (7, 0, 0, 0))[2] == (4 + 7) + 1 + 4


# ------------------------------------------------------------------------------ one card

def test_a_mig_parent_says_na_and_its_instances_sm_activity_never_zero_percent():
    card = GpuCard(0)
    card.update(mig_device(0, (inst(1, sm=60.0), inst(2, sm=20.0))), when=0.0)
    lines = card.compose_lines(70)
    assert lines and len(lines) == 4 + 2
    text = ["".join(t for t, _ in line) for line in lines]
    assert text[1].startswith("SM ") and "40% · util N/A" in text[1]
    assert "[idle]" not in text[0]  # NVML's gpu_idle flag, but its instances are busy
    assert "GI 1 CI 0" in text[4] and text[5].startswith("  └ 1g.10gb")
    card.compact = True
    line = "".join(t for t, _ in card.compose_lines(100)[0])
    assert " N/A" in line and "N/A%" not in line and " 0%" not in line


# ------------------------------------------------------------------------------ the app

def panel_lines(app) -> list[str]:
    cards = app.dashboard.cards
    return [t for i in sorted(cards) for t in cards[i].line_texts()]


def visible(app) -> list[str]:
    return screen_lines(app)


@asynccontextmanager
async def running(scenario: str, size: tuple[int, int], seconds: float = 5):
    """The dashboard on a simulator scenario, ``seconds`` sampled and drawn."""
    app = GputopApp(demo_backend(scenario), autostart=False)
    async with app.run_test(size=size) as pilot:
        advance(app, seconds)
        await pilot.pause()
        await pilot.pause()
        yield app


async def test_eight_gpus_of_seven_instances_at_120x40_show_every_instance():
    async with running("mig-dense", (120, 40), 5) as app:
        panel = app.dashboard.panel
        assert panel.mig_style == "chips" and panel.virtual_size.height <= panel.size.height
        lines = panel_lines(app)
        assert len(lines) == 16
        for gpu, chips in zip(lines[0::2], lines[1::2], strict=True):
            assert " N/A " in gpu and "N/A%" not in gpu
            assert chips.strip().startswith("7 MIG SM/mem%")
            assert chips.count("1g.10gb ") == 7  # every instance, none dropped
        assert all(len(line) <= 120 for line in visible(app))
        assert app.dashboard.table.size.height >= 8


async def test_eight_gpus_of_seven_instances_at_80x24_keep_count_busiest_and_fullest():
    async with running("mig-dense", (80, 24), 5) as app:
        assert app.dashboard.panel.mig_style == "inline"
        for line in panel_lines(app):
            assert re.search(r" 7 MIG · SM \d+% 1g\.10gb · mem \d+% 1g\.10gb\s*$", line), line
        assert all(len(line) <= 80 for line in visible(app))
        assert app.dashboard.table.size.height >= 8


async def test_instances_get_a_line_each_when_there_is_room():
    async with running("mig", (140, 60), 5) as app:
        assert not app.dashboard.compact and app.dashboard.panel.mig_style == "lines"
        card = app.dashboard.cards[2]
        text = card.line_texts()
        assert len(text) == 4 + len(card.device.mig_instances)
        assert text[4].startswith("  ├ 3g.40gb    GI 2 CI 0")
        assert text[-1].startswith("  └ 2g.20gb")
        assert "SM " in text[4] and "MiB" in text[4] and "1 proc" in text[4]
        assert len(app.dashboard.cards[4].line_texts()) == 4  # a whole GPU: no instance lines


async def test_the_gi_ci_column_shows_only_while_some_gpu_has_mig_on():
    async with running("mig", (120, 40), 3) as app:
        table = app.dashboard.table
        assert [c.title for c in table.columns][:2] == ["GPU", "GI/CI"]
        cells = {row.key: row.cells for row in table.rows}
        snap = app.dashboard.snapshot
        for dev in snap.devices:
            for proc in dev.processes:
                want = (f"{proc.gpu_instance_id}/{proc.compute_instance_id}"
                        if proc.gpu_instance_id is not None else "-")
                assert cells[f"{dev.index}:{proc.pid}"][1] == want
        assert any(c[1] != "-" for c in cells.values()) and any(c[1] == "-" for c in cells.values())
        text = "\n".join(visible(app))
        assert "GI/CI" in text
    async with running("training", (120, 40), 3) as app:
        assert "GI/CI" not in [c.title for c in app.dashboard.table.columns]


def test_rows_carry_the_instance_cell_only_under_mig():
    proc = Process(pid=7, gpu_instance_id=2, compute_instance_id=0, command="python x.py")
    dev = mig_device(0, (inst(2, procs=(proc,)),))
    snap = Snapshot(host="h", time=0.0, backend="sim", devices=(dev,))
    assert build_rows(snap)[0].cells[:3] == ("0", "2/0", "7")
    whole = Snapshot(host="h", time=0.0, backend="sim",
                     devices=(Device(index=0, processes=(Process(pid=7),)),))
    assert build_rows(whole)[0].cells[:2] == ("0", "7")
