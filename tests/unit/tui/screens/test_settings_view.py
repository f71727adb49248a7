"""The settings file's process-table layout (columns, sort) as the dashboard draws it."""

from __future__ import annotations

from tests.support.demo import advance
from tests.support.tui import (
    make_app,
    notices,
    settle,
    table,
    visible_lines,
)


def table_header(app) -> str:
    return next(line for line in visible_lines(app) if "COMMAND" in line or "GROUP" in line)


async def test_only_the_columns_set_are_drawn_sorted_as_set():
    app = make_app("mixed", columns=("gpu", "pid", "gpu_mem", "command"), sort="gpu_mem",
                   sort_descending=False)
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        header = table_header(app)
        assert "GPU MEM▲" in header and "PID" in header and "COMMAND" in header
        for hidden in ("USER", "JOB", "SM%", "CPU%", "HOST MEM", "TIME"):
            assert hidden not in header, hidden
        t = table(app)
        memory = [r.process.gpu_memory_mib or 0 for r in t.rows]
        assert memory == sorted(memory) and len(set(memory)) > 1
        row = t.rows[0]
        line = next(x for x in visible_lines(app) if (row.process.command or "")[:20] in x
                    and str(row.process.pid) in x)
        assert (row.process.user or "N/A") not in line.split()  # its cell is not drawn
        await pilot.press("M")  # the key still flips it
        await settle(pilot)
        assert "GPU MEM▼" in table_header(app)
        await pilot.press("b")  # group rows: the same columns hidden, never the group's name
        await settle(pilot)
        header = table_header(app)
        assert "GROUP" in header and "PROCS" in header and "USER" not in header
        assert "TIME" not in header


async def test_sorting_by_a_hidden_column_says_so():
    app = make_app("mixed", columns=("gpu", "pid", "command"))
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert table(app).sort_column == "time"
        # in the header, in the key's own frame: a notice came a frame later, each time
        assert "COMMAND  sorted by TIME▼" in table_header(app)
        assert not notices(app)
        await pilot.press("P")
        await settle(pilot)
        assert "PID▲" in table_header(app)


async def test_without_settings_every_column_shows_sorted_by_gpu():
    app = make_app("mixed")
    async with app.run_test(size=(120, 40)) as pilot:
        advance(app, 2)
        await settle(pilot)
        header = table_header(app)
        for title in ("GPU▲", "USER", "SM%", "HOST MEM", "TIME", "COMMAND"):
            assert title in header, title
        # no process of the simulator is attributed to a job: JOB holds nothing and gives
        # its room to the command (#27); a process with a job brings it back
        assert "JOB" not in header


def test_run_app_hands_the_settings_to_the_dashboard(monkeypatch, tmp_path):
    from gputop.commands.dashboard import configure
    from gputop.commands.main import build_parser
    from gputop.tui import app as app_module
    from tests.support.demo import demo_backend

    (tmp_path / "gputop").mkdir(exist_ok=True)
    (tmp_path / "gputop" / "config.toml").write_text(
        'theme = "light"\ninterval = 2\nreadonly = true\ncolumns = ["pid", "command"]\n'
        'sort = "pid"\nsort_order = "descending"\nrecord_fields = ["index"]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    parser = build_parser()
    config = configure(parser, [], parser.parse_args([]))
    started = []
    monkeypatch.setattr(app_module.GputopApp, "run", lambda self: started.append(self))
    app_module.run_app(config, demo_backend("training"), None, None)
    (app,) = started
    assert (app.theme, app.sampler.interval, app.readonly) == ("light", 2.0, True)
    assert app.table_layout == (("pid", "command"), "pid", True)
    assert app.record_fields == "index"
