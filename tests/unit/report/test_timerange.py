"""`--since` / `--until` (gputop.report.timerange): times, and durations back from the end."""

from __future__ import annotations

from datetime import datetime

import pytest

from gputop.core.errors import UsageError
from gputop.report.timerange import needs_end, parse_time, resolve


def test_a_unix_time_an_iso_time_and_a_duration():
    assert parse_time("1763769600", "--since").at == 1763769600.0
    assert parse_time("2025-11-22T00:00:00Z", "--since").at == 1763769600.0
    assert parse_time("2025-11-22 01:00+01:00", "--since").at == 1763769600.0
    local = datetime(2025, 11, 22, 8, 30).timestamp()  # no zone: local time
    assert parse_time("2025-11-22T08:30", "--since").at == local
    assert parse_time("2h", "--since").back_s == 7200.0
    assert parse_time("1d12h", "--since").back_s == 1.5 * 86400
    assert parse_time("2w", "--since").back_s == 14 * 86400
    assert parse_time("90m", "--since").back_s == parse_time("1.5h", "--since").back_s


@pytest.mark.parametrize("bad", ["", "yesterday", "2h30", "-5", "nan", "inf", "12:00x",
                                 "2025-13-01", "h"])
def test_a_bad_time_is_one_usage_error_naming_the_option(bad):
    with pytest.raises(UsageError, match=r"^--until '.*': expected a Unix time, an ISO time"):
        parse_time(bad, "--until")


def test_durations_count_back_from_the_end_and_since_from_until():
    end = 10_000.0
    assert resolve(parse_time("2h", "--since"), None, end) == (end - 7200, None)
    assert resolve(None, parse_time("1h", "--until"), end) == (None, end - 3600)
    assert resolve(parse_time("2h", "--since"), parse_time("1h", "--until"), end) == \
        (end - 3 * 3600, end - 3600)
    assert resolve(parse_time("2h", "--since"), parse_time("5000", "--until"), end) == \
        (5000 - 7200, 5000)
    assert resolve(parse_time("100", "--since"), None, None) == (100.0, None)
    assert not needs_end(parse_time("100", "--since"), None)
    assert needs_end(None, parse_time("1m", "--until"))


def test_a_range_that_ends_before_it_starts_is_refused():
    with pytest.raises(UsageError, match="--until 100 is not after --since 200"):
        resolve(parse_time("200", "--since"), parse_time("100", "--until"), None)

