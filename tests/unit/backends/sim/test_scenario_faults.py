"""A scenario's [faults.N] tables: health readings a simulated GPU reports (#27)."""

from __future__ import annotations

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.backends.sim.scenario import parse


def test_the_unhealthy_scenario_reports_its_faults_and_only_on_its_gpus() -> None:
    backend = SimBackend(BackendOptions(scenario="unhealthy"))
    backend.open()
    devs = {d.index: d for d in backend.sample().devices}
    assert devs[2].ecc_errors_uncorrected_volatile == 12 and devs[3].remapped_rows_pending
    assert devs[5].pcie_width == 4 and devs[5].pcie_width_max == 16 and devs[6].xid_last == 48
    assert devs[0].ecc_errors_uncorrected_volatile in (0, None) and devs[0].pcie_width == 16


@pytest.mark.parametrize("faults, why", [
    ({"9": {"xid_last": 1}}, "outside 0..7"),
    ({"1": {"temperature_c": 99}}, "unknown reading 'temperature_c'"),
])
def test_a_bad_fault_is_refused_naming_it(faults, why) -> None:
    with pytest.raises(ValueError, match=why):
        parse({"part": "h100-sxm", "count": 8, "faults": faults}, "x")
