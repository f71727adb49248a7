"""Write the recording rules `gputop report --prometheus` reads from (``gputop exporter
--recording-rules``): one rule per family in ``own.COPIED``, copying it every
``own.COPY_INTERVAL_S`` under ``own.copy_of(family)``.

A report over a week of 15 s scrapes would otherwise walk every sample of every job's series
(Prometheus finds a value at an instant by decoding the samples before it); over the copies it
reads one sample an hour, and the raw series only at the range's edges. A copy, not an
``increase()``: the exporter serves an ended job's counters flat for a day, so an hourly copy
holds every job's final figures exactly, where an hourly rise would extrapolate at each end.

Pure: text out, the strings Prometheus's own names (no quoting needed).
"""

from __future__ import annotations

from gputop.exporter import own

GROUP = "gputop-report"

HEADER = """\
# The recording rules `gputop report --prometheus` reads, written by `gputop exporter
# --recording-rules`. Load it with rule_files in prometheus.yml; check it with
# `promtool check rules FILE`. Each rule copies one of the exporter's job accounting families
# once an hour, so that a report over days reads an hour's sample, not every scrape; without
# them the report still works, reading the raw series at steps (slower over long ranges).
# The copies keep every label; they add one sample an hour per job series.
"""


def recording_rules(interval_s: int = own.COPY_INTERVAL_S) -> str:
    """Return the rule file: one group evaluated every ``interval_s`` seconds, one rule per
    copied family."""
    rules = "".join(f"      - record: {own.copy_of(family)}\n        expr: {family}\n"
                    for family in own.COPIED)
    return (f"{HEADER}groups:\n  - name: {GROUP}\n    interval: {interval_s}s\n"
            f"    rules:\n{rules}")
