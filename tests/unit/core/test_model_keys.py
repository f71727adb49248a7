"""The new process keys through the gputop/1 codec and the cluster protocol's decoder."""

import json

import pytest

from gputop.cluster.protocol import decode_snapshot
from gputop.core.model import (
    Container,
    Device,
    Job,
    Process,
    SchemaError,
    Snapshot,
    snapshot_from_json,
    snapshot_to_json,
)

OWNED = Process(pid=4242, gpu_memory_mib=100.0,
                container=Container(runtime="containerd", id="ee4b20e90ac7", pod="trainer-0",
                                    pod_namespace="research", pod_uid="0125ec2f"),
                job=Job("slurm", "4242", "0"), namespace_pid=7)
OUTSIDE = Process(pid=99, gpu_memory_mib=12.0, outside_pid_namespace=True)
GONE = Process(pid=98, gpu_memory_mib=10.0, gone=True)


def doc(*procs):
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(Device(index=0, processes=procs),))
    return json.loads(json.dumps(snapshot_to_json(snap)))


def test_round_trip_through_json_and_the_cluster_decoder():
    data = doc(OWNED, OUTSIDE, Process(pid=1), GONE)
    proc = data["devices"][0]["processes"][0]
    assert proc["container"]["pod_uid"] == "0125ec2f" and proc["job"]["id"] == "4242"
    assert data["devices"][0]["processes"][2]["container"] is None
    for decode in (snapshot_from_json, decode_snapshot):
        assert decode(doc(OWNED, OUTSIDE, Process(pid=1), GONE)).devices[0].processes == (
            OWNED, OUTSIDE, Process(pid=1), GONE)
    assert data["devices"][0]["processes"][3]["gone"] is True


def test_an_old_agent_without_the_keys_decodes():
    data = doc(Process(pid=5))
    for key in ("container", "job", "namespace_pid", "outside_pid_namespace", "gone"):
        del data["devices"][0]["processes"][0][key]
    assert snapshot_from_json(data).devices[0].processes == (Process(pid=5),)
    assert decode_snapshot(data).devices[0].processes == (Process(pid=5),)


@pytest.mark.parametrize("key, value", [
    ("container", "docker"), ("container", {"id": 5}), ("job", {"scheduler": "slurm"}),
    ("job", {"scheduler": "slurm", "id": 42}), ("namespace_pid", "7"), ("namespace_pid", True),
    ("outside_pid_namespace", "yes"), ("gone", 1),
])
def test_wrong_types_are_schema_errors(key, value):
    for decode in (snapshot_from_json, decode_snapshot):
        data = doc(Process(pid=5))
        data["devices"][0]["processes"][0][key] = value
        with pytest.raises(SchemaError):
            decode(data)


def test_a_remote_container_name_cannot_reach_the_terminal():
    data = doc(OWNED)
    data["devices"][0]["processes"][0]["container"]["name"] = "evil\x1b[2J"
    name = decode_snapshot(data).devices[0].processes[0].container.name
    assert name.isprintable() and "\x1b" not in name
