"""`gputop snapshot --json` on the MIG scenario, as a process: instances nest under their GPU
with their profiles, UUIDs and processes."""

import json
import subprocess

from tests.support.paths import gputop_cmd


def test_snapshot_json_nests_instances_with_profiles_uuids_and_processes():
    out = subprocess.run(gputop_cmd("snapshot", "--json", "--backend", "sim", "--scenario", "mig"),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    dev = json.loads(out)["devices"][2]
    assert dev["mig_mode"] == "enabled" and dev["utilization_gpu_pct"] is None
    inst = dev["mig_instances"][0]
    assert (inst["profile"], inst["gpu_instance_id"], inst["memory_total_mib"]) == \
        ("3g.40gb", 2, 40448)
    assert inst["uuid"].startswith("MIG-") and inst["processes"][0]["gpu_instance_id"] == 2

