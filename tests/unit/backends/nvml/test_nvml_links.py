"""The link rates of a GPU without GPM, from NVML's cumulative counters: pure arithmetic, no device
(gputop/backends/nvml/links.py; tests/e2e/backends/nvml/test_link_counters.py reads them from the
C fake)."""

from __future__ import annotations

import pytest

from gputop.backends.nvml.links import counter_rate, total_rate


def test_a_rate_is_the_delta_over_the_timestamps():
    # 2 GiB in KiB over half a second (timestamps in µs): 4 GiB/s in KiB/s
    assert counter_rate((1_000, 10_000_000), (1_000 + 2 * 1024 * 1024, 10_500_000)) == \
        pytest.approx(4 * 1024 * 1024)
    assert counter_rate((5, 1), (5, 2)) == 0.0  # an idle link is 0, measured


def test_the_first_reading_gives_no_rate():
    assert counter_rate(None, (1_000, 10_000_000)) is None


def test_a_counter_that_went_backwards_gives_no_rate_for_that_tick():
    assert counter_rate((9_000, 10_000_000), (100, 11_000_000)) is None  # reset or wrap
    assert counter_rate((100, 11_000_000), (200, 12_000_000)) == pytest.approx(100.0)  # next tick


@pytest.mark.parametrize("prev, cur", [((1, 0), (2, 1_000_000)),  # no timestamp then
                                       ((1, 1_000_000), (2, 1_000_000)),  # none elapsed
                                       ((1, 2_000_000), (2, 1_000_000))])  # time ran back
def test_a_missing_or_stale_timestamp_gives_no_rate(prev, cur):
    assert counter_rate(prev, cur) is None


def test_the_links_add_up_and_one_unknown_link_makes_the_total_unknown():
    one_s = ((0, 1_000_000), (1024, 2_000_000))  # 1024 KiB/s
    assert total_rate([one_s, one_s, one_s]) == pytest.approx(3 * 1024)
    assert total_rate([one_s, (None, (1024, 2_000_000))]) is None  # less than there was
    assert total_rate([]) is None  # no link: N/A, not 0
