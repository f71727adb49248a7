"""The field table against nvidia-smi's own help texts and real CSV headers."""

from __future__ import annotations

import pytest

from gputop.commands.query import help_text
from gputop.formats.query_csv import header_line
from gputop.formats.query_fields import (
    APPS_FIELDS,
    GPU_FIELDS,
    InvalidField,
    lookup,
    parse_field_list,
)
from tests.support.query import ALL_FIELDS_CAPTURES, FIX, header_names, header_titles, help_names

HELP_FILES = [FIX / "help-query-gpu.txt", FIX / "help-query-gpu_590.48.01_h100.txt"]


def _all_help_entries() -> list[list[str]]:
    seen, out = set(), []
    for path in HELP_FILES:
        for entry in help_names(path):
            if entry[0] not in seen:
                seen.add(entry[0])
                out.append(entry)
    return out


def test_every_help_field_and_alias_is_known():
    entries = _all_help_entries()
    assert len(entries) == 215  # 214 of driver 580 + edpp_multiplier of 590
    for canonical, *aliases in entries:
        assert lookup(canonical).name == canonical
        for alias in aliases:
            assert lookup(alias).name == canonical, alias
    assert {f.name for f in GPU_FIELDS} == {e[0] for e in entries}


def test_table_follows_nvidia_smi_order():
    order = [e[0] for e in help_names(HELP_FILES[0])]
    ours = [f.name for f in GPU_FIELDS if f.name != "edpp_multiplier"]
    assert ours == order


# 580 has the inactive remapped rows and the partition health, 590 the EDPP multiplier
# (the two --help-query-gpu texts line-diffed).
ONE_GENERATION_ONLY = {"remapped_rows.correctable_inactive", "remapped_rows.uncorrectable_inactive",
                       "fabric.health.partition_assigned", "edpp_multiplier"}


@pytest.mark.parametrize("capture", ALL_FIELDS_CAPTURES, ids=lambda p: p.name)
def test_header_of_every_field_and_alias_matches_real_capture(capture):
    titles = dict(zip(header_names(capture), header_titles(capture), strict=True))
    checked = 0
    for canonical, *aliases in _all_help_entries():
        if canonical not in titles:  # a field of the other generation (580 or 590 only)
            assert canonical in ONE_GENERATION_ONLY, canonical
            continue
        for name in (canonical, *aliases):
            assert header_line([lookup(name)]) == titles[canonical] + "\n", name
            checked += 1
    assert checked > 212


def test_aliases_print_the_canonical_header():
    fields = parse_field_list("clocks.sm,gpu_name,clocks_throttle_reasons.active,retired_pages.sbe,"
                              "gpu.power.current_limit,clocks.max.gr,inforom.power")
    assert header_line(fields) == (
        "clocks.current.sm [MHz], name, clocks_event_reasons.active, "
        "retired_pages.single_bit_ecc.count, enforced.power.limit [W], clocks.max.graphics [MHz], "
        "inforom.pwr\n")


def test_compute_apps_fields_and_header():
    entries = help_names(FIX / "help-query-compute-apps_590.48.01_h100.txt")
    assert [e[0] for e in entries] == [f.name for f in APPS_FIELDS]
    for canonical, *aliases in entries:
        for alias in aliases:
            assert lookup(alias, "compute-apps").name == canonical
    capture = FIX / "csv_compute-apps_1xH100-80GB-HBM3_590.48.01_load.csv"
    fields = [lookup(n, "compute-apps") for n in header_names(capture)]
    assert header_line(fields) == capture.read_text().split("\n", 1)[0] + "\n"
    assert lookup("used_memory", "compute-apps").header == "used_gpu_memory [MiB]"
    with pytest.raises(InvalidField):
        lookup("index", "compute-apps")


def test_unknown_field_message_is_nvidia_smis():
    with pytest.raises(InvalidField) as err:
        parse_field_list("index,device_minor")
    assert str(err.value) == 'Field "device_minor" is not a valid field to query.'


def test_help_texts_are_nvidia_smis():
    assert help_text("query_compute_apps") == (
        FIX / "help-query-compute-apps_590.48.01_h100.txt").read_text()
    shipped = help_text("query_gpu")
    for path in HELP_FILES:  # every paragraph of both drivers' texts is there, in order
        pos = 0
        for para in path.read_text().split("\n\n"):
            found = shipped.find(para, pos)
            assert found >= 0, para[:80]
            pos = found
    assert shipped.startswith((FIX / "help-query-gpu.txt").read_text()[:2000])
