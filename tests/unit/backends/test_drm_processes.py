"""The DRM backends' process rows: the host's facts beside what the card holds, built by the one
builder every backend uses (HostFacts.process)."""

from __future__ import annotations

from gputop.backends.drm.processes import Held, processes
from gputop.host.processes import GONE, HostFacts


class _Host:
    """Stands in for HostProcesses: fixed facts per PID."""

    def __init__(self, facts: dict[int, HostFacts]) -> None:
        self.facts = facts

    def lookup_device(self, bus, pids):
        return {pid: self.facts[pid] for pid in pids}


def test_a_process_the_host_no_longer_has_is_gone_on_an_amd_or_intel_card_too():
    """The `gone` mark (#27) reached NVML's rows only: the DRM and vendor-tool backends built
    their rows field by field and left it out."""
    host = _Host({10: GONE, 11: HostFacts(user="ana", name="python", command="python train.py")})
    rows = processes(host, "0000:03:00.0", {11: Held(2 * 2**20, 40.0), 10: Held(None, None)})
    assert [(p.pid, p.gone, p.user, p.gpu_memory_mib, p.sm_pct) for p in rows] == [
        (10, True, None, None, None), (11, False, "ana", 2.0, 40.0)]
