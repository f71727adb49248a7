#!/usr/bin/env python3
"""Write docs/reference/dcgm-fields.md from the DCGM field table (gputop/data/dcgm-fields.toml),
so that the page and what the exporter serves never disagree (a unit test compares them).

Usage: scripts/dcgm-fields-doc.py [--check]   (--check: exit 1 if the page is out of date)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gputop.formats import dcgm  # noqa: E402

PAGE = ROOT / "docs" / "reference" / "dcgm-fields.md"
MIG = {"parent": "the GPU's", "instance": "the instance's own", "none": "none"}


def _source(f: dcgm.Field) -> str:
    if f.attr is None:
        return f"combined (`{f.source[1:]}`)"
    where = f"`saturation.{f.attr}` (GPM)" if f.sat else f"`{f.attr}`"
    return where if f.scale == 1.0 else f"{where} × {f.scale:g}"


def render(table: dcgm.Table = dcgm.TABLE) -> str:
    """The page, from the table (the DCGM 4.6 names are listed after a field's older ones)."""
    aliases: dict[int, list[str]] = {}
    for name, fid in table.names.items():  # the older names first, then DCGM 4.6's
        if fid in table.fields and name != table.fields[fid].name:
            aliases.setdefault(fid, []).append(name)
    served = sorted(table.fields.values(), key=lambda f: f.id)
    out = [
        "# DCGM fields: what `gputop exporter` serves",
        "",
        "<!-- Written by scripts/dcgm-fields-doc.py from gputop/data/dcgm-fields.toml: edit those."
        " -->",
        "",
        f"Of the {len(set(table.names.values()))} fields dcgm-exporter can serve "
        f"({len(table.names)} names: aliases, 1.x names and DCGM 4.6's new names included), "
        "gputop serves "
        f"{len(served)}; the others are listed below with the reason. **Default** marks the "
        "fields served without `-f`. A counters file (`gputop exporter -f FILE`, dcgm-exporter's "
        "format) may name any served field by any of its names; it is served under that name, "
        "with the file's type and help text. Unit: the unit of the value served; `ratio` is 0–1.",
        "",
        "| field | id | type | unit | from gputop's model | under MIG | default |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in served:
        names = f"`{f.name}`" + "".join(f"<br>`{a}`" for a in aliases.get(f.id, []))
        out.append(f"| {names} | {f.id} | {f.type} | {f.unit or ''} | {_source(f)} | "
                   f"{MIG[f.mig]} | {'yes' if f.default else ''} |")
    out += ["", "## Not served, and why", ""]
    groups: dict[str, list[int]] = {}
    for fid, reason in table.unserved.items():
        groups.setdefault(reason, []).append(fid)
    canonical: dict[int, str] = {}  # a field's first DCGM_FI_ name: never one DCGM 4.6 gave it
    for name, fid in table.names.items():
        if name.startswith("DCGM_FI_"):
            canonical.setdefault(fid, name)
    for reason, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        names = ", ".join(f"`{canonical[i]}`" for i in sorted(ids))
        out.append(f"- **{reason[0].upper()}{reason[1:]}** ({len(ids)}): {names}")
    return "\n".join(out) + "\n"


def main() -> int:
    text = render()
    if sys.argv[1:] == ["--check"]:
        return 0 if PAGE.read_text() == text else 1
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
