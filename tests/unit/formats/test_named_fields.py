"""The tables that read the model by attribute name (nvidia-smi's query fields, dcgm-exporter's
metrics, the advisor's activity curve) name only fields the model declares.

Those reads are getattr(device, name) by design: the call budget (gputop.core.budget) keys on the
same names. A field renamed in the model must fail here, not on the first device that reports it.
"""

from __future__ import annotations

from dataclasses import fields

from gputop.advisor import curve
from gputop.core.model import Device, Saturation
from gputop.formats import dcgm
from gputop.formats.query_fields import QUERIES

DEVICE = {f.name for f in fields(Device)}
SATURATION = {f.name for f in fields(Saturation)}


def test_every_query_field_with_a_model_source_names_a_device_field() -> None:
    named = {f.attr for table in QUERIES.values() for f in table if f.attr is not None}
    assert len(named) > 20  # the table is read: most GPU fields have a source
    assert sorted(named - DEVICE) == []


def test_every_dcgm_field_names_a_field_of_the_device_or_of_its_saturation_or_a_combination():
    wrong = [f.name for f in dcgm.FIELDS
             if f.attr is not None and f.attr not in (SATURATION if f.sat else DEVICE)]
    assert wrong == []
    combined = {f.source[1:] for f in dcgm.FIELDS if f.attr is None}
    assert combined == set(dcgm.COMBINATIONS)  # each combination used, none missing
    assert any(f.sat for f in dcgm.FIELDS) and any(not f.sat for f in dcgm.FIELDS)


def test_the_advisors_activity_curve_names_saturation_fields() -> None:
    assert sorted(set(curve._ACTIVITY) - SATURATION) == []
