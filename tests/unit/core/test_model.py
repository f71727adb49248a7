import json

import pytest

from gputop.core.model import (
    SCHEMA,
    Device,
    Hint,
    MigInstance,
    Process,
    Saturation,
    SchemaError,
    Snapshot,
    XidEvent,
    snapshot_from_json,
    snapshot_to_json,
)

# Every per-device key DESIGN.md's gputop/1 example shows.
DESIGN_DEVICE_KEYS = {
    "index", "uuid", "name", "vendor", "pci_bus_id", "status", "memory_total_mib",
    "memory_used_mib", "utilization_gpu_pct", "utilization_memory_pct", "temperature_c",
    "fan_pct", "power_draw_w", "power_limit_w", "power_limit_default_w", "power_limit_min_w",
    "power_limit_max_w", "energy_j", "clock_sm_mhz", "clock_mem_mhz", "clock_sm_max_mhz",
    "pstate", "clock_event_reasons", "saturation", "processes",
}
DESIGN_SATURATION_KEYS = {
    "source", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_bw_pct",
    "fp16_pct", "fp32_pct", "fp64_pct", "pcie_tx_mibps", "pcie_rx_mibps", "nvlink_tx_mibps",
    "nvlink_rx_mibps",
}
DESIGN_PROCESS_KEYS = {"pid", "user", "name", "command", "gpu_memory_mib", "sm_pct", "cpu_pct",
                       "host_memory_mib"}


def sample_snapshot() -> Snapshot:
    dev = Device(
        index=0, uuid="GPU-1", name="NVIDIA H100 80GB HBM3", vendor="nvidia",
        memory_total_mib=81559, memory_used_mib=40211, utilization_gpu_pct=97,
        power_draw_w=512.3, power_limit_w=700.0, clock_event_reasons=("sw_power_cap",),
        saturation=Saturation(source="gpm", sm_active_pct=83.0),
        processes=(Process(pid=4242, user="alice", name="python", gpu_memory_mib=40000),),
    )
    return Snapshot(host="node-a", time=1763769600.123, backend="nvml", devices=(dev,),
                    driver_version="580.159.04",
                    hints=(Hint(device=0, code="power-capped", severity="warning", message="m"),))


def test_every_design_key_is_present_and_unavailable_is_null():
    doc = snapshot_to_json(sample_snapshot())
    assert doc["schema"] == SCHEMA
    assert {"schema", "host", "time", "backend", "driver_version", "devices", "hints"} <= doc.keys()
    dev = doc["devices"][0]
    assert DESIGN_DEVICE_KEYS <= dev.keys()
    assert DESIGN_SATURATION_KEYS <= dev["saturation"].keys()
    assert DESIGN_PROCESS_KEYS <= dev["processes"][0].keys()
    assert dev["fan_pct"] is None and dev["temperature_c"] is None  # never a made-up 0
    assert "sim" not in dev  # only the simulator carries ground truth
    assert json.loads(json.dumps(doc)) == doc


def test_round_trip_is_identity():
    snap = sample_snapshot()
    assert snapshot_from_json(json.loads(json.dumps(snapshot_to_json(snap)))) == snap


def test_unknown_keys_from_a_newer_agent_are_ignored():
    doc = snapshot_to_json(sample_snapshot())
    doc["future_key"] = 1
    doc["devices"][0]["future_metric"] = 2
    assert snapshot_from_json(doc).devices[0].utilization_gpu_pct == 97


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema="gputop/2"), "schema"),
        (lambda d: d.pop("host"), "host"),
        (lambda d: d.update(devices="x"), "devices"),
        (lambda d: d["devices"][0].pop("index"), "index"),
        (lambda d: d["devices"][0]["processes"][0].pop("pid"), "pid"),
        (lambda d: d["devices"][0].update(saturation=[1]), "saturation"),
    ],
)
def test_invalid_documents_raise_schema_error(mutate, message):
    doc = snapshot_to_json(sample_snapshot())
    mutate(doc)
    with pytest.raises(SchemaError, match=message):
        snapshot_from_json(doc)


def mig_snapshot() -> Snapshot:
    proc = Process(pid=77, user="bob", gpu_memory_mib=9000, gpu_instance_id=2,
                   compute_instance_id=0)
    inst = MigInstance(gpu_instance_id=2, compute_instance_id=0, index=0, profile="3g.40gb",
                       uuid="MIG-1d9e0ec3-3c3a-5a09-9b0e-7f4a1a4a4a4a", sm_count=60,
                       memory_total_mib=40192, memory_used_mib=9100,
                       saturation=Saturation(source="gpm", sm_active_pct=41.0),
                       processes=(proc,))
    dev = Device(index=0, name="NVIDIA H100 80GB HBM3", mig_mode="enabled",
                 mig_mode_pending="enabled", processes=(proc,), mig_instances=(inst,))
    return Snapshot(host="node-m", time=1.0, backend="nvml", devices=(dev,))


def test_mig_instances_round_trip_and_pass_the_validation_layer():
    from gputop.core.untrusted import clean_document
    doc = json.loads(json.dumps(snapshot_to_json(mig_snapshot())))
    assert doc["devices"][0]["mig_mode"] == "enabled"
    assert doc["devices"][0]["mig_instances"][0]["processes"][0]["gpu_instance_id"] == 2
    assert snapshot_from_json(doc) == mig_snapshot()
    assert snapshot_from_json(clean_document(doc)) == mig_snapshot()


@pytest.mark.parametrize("mutate, message", [
    (lambda m: m.pop("gpu_instance_id"), "gpu_instance_id"),
    (lambda m: m.update(compute_instance_id="0"), "compute_instance_id"),
    (lambda m: m["processes"][0].pop("pid"), "pid"),
    (lambda m: m.update(memory_used_mib=float("inf")), "memory_used_mib"),
])
def test_a_malformed_mig_instance_is_refused_by_name(mutate, message):
    from gputop.core.untrusted import clean_document
    doc = snapshot_to_json(mig_snapshot())
    mutate(doc["devices"][0]["mig_instances"][0])
    with pytest.raises(SchemaError, match=message):
        snapshot_from_json(clean_document(doc))


def test_derived_percentages_handle_missing_values():
    assert Device(index=0).memory_pct is None
    assert Device(index=0, memory_used_mib=50, memory_total_mib=200).memory_pct == 25.0
    assert Device(index=0, power_draw_w=350, power_limit_w=700).power_pct == 50.0


def test_xid_events_round_trip_and_an_older_stream_without_them_still_reads():
    from dataclasses import replace

    from gputop.core.untrusted import clean_document

    snap = sample_snapshot()
    dev = replace(snap.devices[0], xid_last=79, xid_events=(XidEvent(0, 79, 1763769600.5),))
    snap = replace(snap, devices=(dev,))
    doc = json.loads(json.dumps(snapshot_to_json(snap)))
    assert doc["devices"][0]["xid_events"] == [{"device": 0, "code": 79, "time": 1763769600.5}]
    assert snapshot_from_json(doc) == snapshot_from_json(clean_document(doc)) == snap
    del doc["devices"][0]["xid_events"]  # an agent older than the field
    assert snapshot_from_json(clean_document(doc)).devices[0].xid_events == ()
    doc["devices"][0]["xid_events"] = [{"device": 0, "code": "79", "time": 1.0}]
    with pytest.raises(SchemaError):
        snapshot_from_json(clean_document(doc))


def test_idle_figures_travel_and_older_streams_without_them_decode():
    """The ledger's per-process figures (#30) go through the gputop/1 codec and the untrusted
    input check; a document from an agent that predates them still decodes, as not known."""
    import copy

    from gputop.core import untrusted
    from gputop.core.model import Device, Process, Snapshot, snapshot_from_json, snapshot_to_json

    snap = Snapshot(host="n", time=1.0, backend="sim", devices=(Device(
        index=0, processes=(Process(pid=7, idle_s=42.5, idle_energy_j=1200.0),)),))
    doc = snapshot_to_json(snap)
    back = snapshot_from_json(untrusted.clean_document(copy.deepcopy(doc)))
    assert back.devices[0].processes[0].idle_s == 42.5
    assert back.devices[0].processes[0].idle_energy_j == 1200.0
    for key in ("idle_s", "idle_energy_j"):
        del doc["devices"][0]["processes"][0][key]
    old = snapshot_from_json(untrusted.clean_document(doc)).devices[0].processes[0]
    assert old.idle_s is None and old.idle_energy_j is None
