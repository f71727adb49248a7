from gputop.core.formatting import duration, host_mem, mib, num
from gputop.tui.text import fmt


def test_bar_fills_in_eighths_and_keeps_its_width():
    filled, empty = fmt.bar(50, 10)
    assert filled == "█████" and empty == "░" * 5
    filled, empty = fmt.bar(56.25, 4)  # 2.25 cells
    assert filled == "██▎" and len(filled + empty) == 4
    assert fmt.bar(None, 6) == ("", " " * 6)
    assert fmt.bar(250, 3) == ("███", "")
    assert fmt.bar(-5, 3) == ("", "░░░")


def test_sparkline_scales_pads_and_shows_gaps():
    assert fmt.sparkline([0, 50, 100], 5) == "   ▄█"
    assert fmt.sparkline([None, 100], 2) == " █"
    assert fmt.sparkline([0.1], 1) == "▁"  # any activity is visible
    assert fmt.sparkline(range(100), 3) == "███"


def test_a_sparkline_cell_is_one_shared_object_per_character():
    # the cards keep a cell per point (7200 at 8 GPUs): each must not be a string of its own
    assert fmt.trace_char(50.0) is fmt.trace_char(51.0)
    assert fmt.spark_char(50.0) is fmt.spark_char(51.0)
    assert fmt.trace_char(99.0) != fmt.trace_char(1.0)


def test_duration_drops_seconds_past_an_hour():
    assert duration(59) == "0:59"
    assert duration(3599) == "59:59"
    assert duration(3600 + 9 * 60 + 7) == "1h09m"
    assert duration(2 * 86400 + 3 * 3600) == "2d03h"
    assert duration(None) == "N/A"


def test_memory_formats_and_missing_values():
    assert mib(40211) == "40211MiB"
    assert mib(150000) == "146.5GiB"
    assert host_mem(512) == "512MiB"
    assert host_mem(6144) == "6.0GiB"
    assert num(None) == "N/A"


def test_fit_and_rfit_cut_with_an_ellipsis():
    assert fmt.fit("abc", 5) == "abc  "
    assert fmt.fit("abcdef", 4) == "abc…"
    assert fmt.rfit("7", 3) == "  7"


def test_level_thresholds():
    assert [fmt.level(v) for v in (None, 10, 50, 85, 100)] == ["none", "low", "mid", "high",
                                                                "high"]
