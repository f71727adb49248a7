"""dcgm-exporter's counters file (its ``-f``/``--collectors`` CSV): which ``DCGM_FI_*`` fields to
serve, each as ``NAME, type, help``. An operator's existing file works unchanged.

Read as dcgm-exporter reads it (``internal/pkg/counters/counter_config.go``): ``#`` starts a
comment line, blank lines are skipped, spaces around the commas are dropped, a row has exactly
three columns (a help text holding a comma is quoted), the type is one of ``gauge``, ``counter``,
``histogram``, ``summary`` or ``label``, and each field is served under the name the row gives
(an alias, a 1.x name or DCGM 4.6's new name included). A file that is not of this shape stops
gputop with one line naming the row, as it stops dcgm-exporter: a row that is not three
columns, a type it does not know. Every field row of the right shape that gputop does not serve
is one note and the rest are served: a field it does not serve (the reason is the table's), a
name no DCGM it knows has (dcgm-exporter d5e5f51 would stop there; a newer DCGM may know it), a
text field asked for as a number, a field listed twice (the last row is served), one of
dcgm-exporter's own ``DCGM_EXP_*`` counts. Pure: text in, metrics out.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from gputop.formats import dcgm

# dcgm-exporter's own windowed counts and checks (its DCGM_EXP_* rows), which are not DCGM fields.
EXPORTER_ROWS = {
    "DCGM_EXP_CLOCK_EVENTS_COUNT": "dcgm-exporter's windowed count of clock events is not "
                                   "served; gputop_clock_event_active holds each reason",
    "DCGM_EXP_XID_ERRORS_COUNT": "dcgm-exporter's windowed count of Xid errors is not served; "
                                 "DCGM_FI_DEV_XID_ERRORS holds the last one",
    "DCGM_EXP_GPU_HEALTH_STATUS": "DCGM's health watches are not run; gputop_device_status "
                                  "holds each GPU's state",
    "DCGM_EXP_P2P_STATUS": "peer-to-peer NVLink status is not read",
}


class CountersError(ValueError):
    """A row dcgm-exporter would refuse too: the one line that says which and why."""


@dataclass(frozen=True)
class Counters:
    """The metrics a counters file asks for that gputop serves, in the file's order, and one note
    per row it does not serve."""

    metrics: tuple[dcgm.Metric, ...]
    notes: tuple[str, ...]


def parse(text: str, table: dcgm.Table = dcgm.TABLE) -> Counters:
    """The metrics a counters file's ``text`` asks for; CountersError names the first row
    dcgm-exporter would refuse (``line N: …``)."""
    chosen: dict[str, tuple[int, dcgm.Metric]] = {}
    notes: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        row = line.strip()
        if not row or row.startswith("#"):
            continue
        try:
            cols = next(csv.reader([row], skipinitialspace=True))
        except csv.Error as exc:
            raise CountersError(f"line {number}: {exc}") from None
        cols = [c.strip() for c in cols]
        if len(cols) != 3:
            raise CountersError(f"line {number}: {len(cols)} columns where dcgm-exporter reads 3 "
                                "(DCGM field, type, help; quote a help text holding a comma)")
        name, kind, help_ = cols
        if name in EXPORTER_ROWS:
            notes.append(f"line {number}: {name} not served: {EXPORTER_ROWS[name]}")
            continue
        if kind not in dcgm.FILE_TYPES:
            raise CountersError(f"line {number}: {name}: type {kind!r} is none of "
                                f"{', '.join(dcgm.FILE_TYPES)}")
        if name not in table.names:
            notes.append(f"line {number}: {name!r} not served: no DCGM field of that name is "
                         "known here (DCGM 4.6 and older)")
            continue
        field = table.field(name)
        if field is None:
            notes.append(f"line {number}: {name} not served: {table.why_not(name)}")
            continue
        if field.text and kind != "label":
            notes.append(f"line {number}: {name} is text: served only as a label (type label)")
            continue
        if name in chosen:
            notes.append(f"line {number}: {name} is listed again (line {chosen[name][0]}): "
                         "this row is served")
        chosen[name] = (number, dcgm.Metric(name, kind, help_, field))
    return Counters(metrics=tuple(m for _, m in chosen.values()), notes=tuple(notes))
