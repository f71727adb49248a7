"""The history plot's braille chart, as a pure function: size, scale, time axis, colours."""

from __future__ import annotations

from gputop.tui.widgets.plot import render_plot

RED, AXIS = (255, 0, 0), (128, 128, 128)
TIMES = [float(t) for t in range(31)]  # 30 s of samples, one a second


def plot(*series, width=40, height=12, times=TIMES):
    return render_plot(list(series), width, height, AXIS, times)


def dotted_rows(text) -> list[int]:
    """Rows of the plot area (top = 0) that hold braille dots."""
    rows = text.plain.split("\n")[1:-2]
    return [i for i, row in enumerate(rows) if any("\u2801" <= c <= "\u28ff" for c in row)]


def test_every_line_is_exactly_the_widget_width_and_the_text_its_height():
    text = plot(("util", [50.0] * 31, RED))
    lines = text.plain.split("\n")
    assert len(lines) == 12
    assert {len(line) for line in lines} == {40}


def test_the_scale_is_0_to_100_percent_top_to_bottom():
    rows = 12 - 3
    assert dotted_rows(plot(("util", [100.0] * 31, RED))) == [0]
    assert dotted_rows(plot(("util", [0.0] * 31, RED))) == [rows - 1]
    assert dotted_rows(plot(("util", [250.0] * 31, RED))) == [0]  # clipped, not off the chart
    labels = [line[:4] for line in plot(("util", [1.0] * 31, RED)).plain.split("\n")[1:-2]]
    assert labels[0] == "100┤" and labels[-1] == "  0┤"
    assert sum(label.endswith("┤") for label in labels) == 5  # 0, 25, 50, 75, 100


def test_another_top_scales_the_axis_and_its_labels():
    # the process view plots CPU% past 100 and memory in GiB against their own axis' top
    text = render_plot([("cpu", [250.0] * 31, RED)], 40, 12, AXIS, TIMES, top=500)
    rows = text.plain.split("\n")[1:-2]
    assert rows[0].startswith("500┤") and rows[-1].startswith("  0┤")
    assert dotted_rows(text) == [len(rows) // 2]  # 250 of 500: the middle row, not the top
    assert {len(line) for line in text.plain.split("\n")} == {40}
    small = render_plot([("mem", [0.1] * 31, RED)], 40, 12, AXIS, TIMES, top=0.5)
    assert small.plain.split("\n")[1].lstrip().startswith("0.5┤")


def test_a_line_joins_its_samples_across_the_whole_width():
    rising = plot(("util", [t * 100 / 30 for t in range(31)], RED))
    rows = rising.plain.split("\n")[1:-2]
    assert dotted_rows(rising) == list(range(len(rows)))  # from the bottom row to the top one
    inner = [row[4:-1] for row in rows]
    assert all(any(r[c] != " " for r in inner) for c in range(len(inner[0])))  # no gap


def test_the_time_axis_says_how_long_ago_from_the_samples_own_times():
    bottom = plot(("util", [50.0] * 31, RED)).plain.split("\n")[-1]
    assert bottom.split() == ["-30s", "-15s", "now"]
    slow = plot(("util", [50.0] * 31, RED), times=[2.0 * t for t in range(31)])
    assert slow.plain.split("\n")[-1].split() == ["-60s", "-30s", "now"]


def test_missing_values_draw_nothing_and_too_few_points_no_line():
    assert dotted_rows(plot(("util", [None] * 31, RED))) == []
    assert dotted_rows(plot(("util", [None] * 30 + [50.0], RED))) == []


def test_series_dots_take_the_series_colour_and_the_frame_the_axis_colour():
    text = plot(("util", [50.0] * 31, RED), ("memory", [None] * 31, (0, 255, 0)))

    def colour_at(i: int):
        found = [s.style.color.get_truecolor()[:3] for s in text.spans
                 if s.start <= i < s.end and s.style and s.style.color]
        return found[-1] if found else None

    dots = {colour_at(i) for i, c in enumerate(text.plain) if "\u2801" <= c <= "\u28ff"}
    assert dots == {RED}
    assert colour_at(text.plain.index("┌")) == AXIS and colour_at(text.plain.index("┘")) == AXIS


def test_value_labels_stand_evenly_apart_at_every_height():
    """#27: at 11 lines (the dashboard's plot) the labels stood 2, 2, 1, 2 rows apart, so 25
    and 75 were drawn where other values are. Now every gap is the same and each label stands
    on the row its value is drawn on; a spare line is left blank above the chart."""
    for height in range(5, 40):
        text = render_plot([("util", [1.0] * 31, RED)], 40, height, AXIS, TIMES)
        lines = text.plain.split("\n")
        assert len(lines) == height and {len(line) for line in lines} == {40}
        top = next(i for i, line in enumerate(lines) if "┌" in line)
        rows = lines[top + 1:-2]
        at = [i for i, row in enumerate(rows) if "┤" in row]
        gaps = {b - a for a, b in zip(at, at[1:])}
        assert len(gaps) == 1 and at[0] == 0 and at[-1] == len(rows) - 1, (height, at)
        for i in at:  # the label's value is drawn on its own row
            value = float(rows[i].split("┤")[0])
            drawn = render_plot([("v", [value] * 31, RED)], 40, height, AXIS, TIMES)
            dots = [j for j, row in enumerate(drawn.plain.split("\n")[top + 1:-2])
                    if any("\u2801" <= c <= "\u28ff" for c in row)]
            assert dots == [i], (height, value)
