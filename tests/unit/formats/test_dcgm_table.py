"""The DCGM field table (gputop/data/dcgm-fields.toml): every name dcgm-exporter accepts is
either served or said not to be, and what consumers in the wild need is served by default."""

from __future__ import annotations

import re

import pytest

from gputop.formats import dcgm
from tests.support.paths import FIXTURES

HERE = FIXTURES / "dcgm-exporter"


def active_rows(name: str) -> list[str]:
    """The field names of a counters file's rows that are not comments."""
    return [line.split(",", 1)[0].strip() for line in (HERE / name).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_every_accepted_name_is_served_or_has_a_reason() -> None:
    table = dcgm.TABLE
    assert len(table.names) > 900  # dcgm_fields.h's names dcgm-exporter accepts, DCGM 4.6's too
    for name, fid in table.names.items():
        served, reason = table.field(name), table.why_not(name)
        assert (served is None) != (reason is None), name
        if served is not None:
            assert served.id == fid
        else:
            assert reason and len(reason) > 15, name


def test_aliases_and_1x_names_reach_the_same_field() -> None:
    table = dcgm.TABLE
    throttle = table.field("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
    assert throttle is table.field("DCGM_FI_DEV_CLOCKS_EVENT_REASONS") and throttle.id == 112
    assert table.field("dcgm_sm_clock") is table.field("DCGM_FI_DEV_SM_CLOCK")
    assert table.field("DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL") is table.field(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")


def test_the_default_set_holds_dcgm_exporters_defaults_but_what_cannot_be_served() -> None:
    default = {m.name for m in dcgm.DEFAULT}
    for name in active_rows("dcgm-exporter_d5e5f51_default-counters.csv"):
        assert (name in default) != (dcgm.TABLE.why_not(name) is not None), name
    assert dcgm.TABLE.why_not("DCGM_FI_DEV_VGPU_LICENSE_STATUS").startswith("vGPU")


def test_what_published_consumers_read_is_served_by_default() -> None:
    """The Datadog Agent's 38 names (29 were served), the OpenShift console's 11 required ones
    (8 were), the throttle alerts' bitmask: all served but the vGPU licence."""
    default = {m.name for m in dcgm.DEFAULT}
    datadog = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", (
        HERE / "datadog-integrations-core_351227e_dcgm_metrics.py").read_text()))
    assert len(datadog) == 38
    assert sorted(datadog - default) == ["DCGM_FI_DEV_VGPU_LICENSE_STATUS"]
    console = active_rows("console-plugin-nvidia-gpu_b709536_required-metrics.csv")
    assert len(console) == 11 and set(console) <= default
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in default


def test_types_units_and_mig_rules_are_as_dcgm_documents_them() -> None:
    f = dcgm.BY_NAME
    assert f["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].type == "counter"
    assert f["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].unit == "mJ"
    assert f["DCGM_FI_DEV_FB_USED"].unit == "MiB" and f["DCGM_FI_DEV_FB_USED"].mig == "instance"
    assert f["DCGM_FI_DEV_GPU_UTIL"].mig == "none"
    assert f["DCGM_FI_PROF_SM_ACTIVE"].unit == "ratio" and f["DCGM_FI_PROF_SM_ACTIVE"].sat
    assert f["DCGM_FI_DRIVER_VERSION"].type == "label" and f["DCGM_FI_DRIVER_VERSION"].text
    for field in dcgm.FIELDS:
        assert field.type in dcgm.TYPES and field.mig in dcgm.MIG_RULES


@pytest.mark.parametrize("doc, needle", [
    ({"field": [{"id": 1, "name": "X", "type": "gauge", "help": "", "from": "a"}],
      "names": {}}, "without their name"),
    ({"field": [{"id": 1, "name": "X", "type": "gauge", "help": "", "from": "a"}],
      "unserved": [{"reason": "r", "ids": [1]}], "names": {"X": 1}}, "both served and not"),
    ({"field": [{"id": 1, "name": "X", "type": "sum", "help": "", "from": "a"}],
      "names": {"X": 1}}, "bad type"),
    ({"field": [{"id": 1, "name": "X", "type": "gauge", "help": "", "from": "a", "text": True}],
      "names": {"X": 1}}, "only be a label"),
])
def test_a_broken_table_is_refused_when_loaded(doc: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        dcgm.parse_table(doc)


def test_the_docs_page_is_written_from_the_table() -> None:
    """docs/reference/dcgm-fields.md is what scripts/dcgm-fields-doc.py writes from the table."""
    import runpy

    from tests.support.paths import ROOT

    script = runpy.run_path(str(ROOT / "scripts" / "dcgm-fields-doc.py"))
    page = (ROOT / "docs" / "reference" / "dcgm-fields.md").read_text()
    assert page == script["render"]()
    for f in dcgm.FIELDS:
        assert f"`{f.name}`" in page
    assert "An NVSwitch's figure" in page
