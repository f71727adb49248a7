"""The exporter without a server: what it emits for a snapshot, and its options and web config."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop.core.errors import UsageError
from gputop.core.model import Device, Process, Snapshot
from gputop.exporter import collect, exposition, own, webconfig
from gputop.formats import dcgm
from tests.support.demo import sim_snapshot


def samples(body: bytes) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            out.setdefault(name, []).append(line)
    return out


def test_every_default_field_the_simulator_reads_is_served_on_every_gpu_and_no_other():
    snap = sim_snapshot()
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    served = [m for m in dcgm.DEFAULT if not m.label]
    assert len(served) > 60
    for metric in served:
        values = [dcgm.value(metric.field, snap, dev) for dev in snap.devices]
        if all(v is None for v in values):
            assert metric.name not in got, metric.name  # nothing read: no family at all
        else:
            assert len(got[metric.name]) == 8, metric.name
    # what the simulator does not model is not made up: an SXM part has no fan, and it has no
    # thresholds or retired pages to report
    for absent in ("DCGM_FI_DEV_FAN_SPEED", "DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_RETIRED_SBE"):
        assert absent not in got
    assert len(got["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"]) == 8


def test_a_value_the_device_does_not_report_is_absent_not_zero():
    dev = Device(index=0, uuid="GPU-x", name="T", pci_bus_id="00000000:01:00.0", vendor="nvidia",
                 temperature_c=None, power_draw_w=250.0)
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(dev,))
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    assert got["DCGM_FI_DEV_POWER_USAGE"] == [
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-x",pci_bus_id="00000000:01:00.0",'
        'device="nvidia0",modelName="T",hostname="n"} 250.0']  # no driver version: no label
    assert "DCGM_FI_DEV_GPU_TEMP" not in got
    assert "DCGM_FI_PROF_SM_ACTIVE" not in got
    assert "# TYPE DCGM_FI_DEV_GPU_TEMP" not in exposition.render(
        collect.families(snap, own.Options(), "t")).decode()


def test_units_follow_dcgm_exporter():
    dev = Device(index=0, energy_j=12.5, utilization_gpu_pct=40)
    dev = Device(index=0, energy_j=12.5, utilization_gpu_pct=40,
                 saturation=dev.saturation.__class__(tensor_active_pct=55.0, pcie_tx_mibps=2.0))
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(dev,))
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    assert got["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][0].endswith(" 12500.0")  # mJ
    assert got["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"][0].endswith(" 0.55")  # a ratio
    assert got["DCGM_FI_PROF_PCIE_TX_BYTES"][0].endswith(" 2.097152e+06")  # bytes/s
    assert got["DCGM_FI_DEV_GPU_UTIL"][0].endswith(" 40.0")  # percent
    text = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n" in text


def test_hostname_labels_and_process_series_are_bounded():
    snap = sim_snapshot("crowded")
    assert all(len(d.processes) > 3 for d in snap.devices)
    opts = own.Options(hostname_labels=("Hostname",), top_processes=3)
    text = exposition.render(collect.families(snap, opts, "t")).decode()
    got = samples(text.encode())
    assert len(got["gputop_process_gpu_memory_bytes"]) == 8 * 3
    assert 'hostname="' not in text and 'Hostname="' in text  # the older name alone
    biggest = max(snap.devices[0].processes, key=lambda p: p.gpu_memory_mib)
    assert any(f'pid="{biggest.pid}"' in line and 'gpu="0"' in line
               for line in got["gputop_process_gpu_memory_bytes"])


def test_hints_device_status_and_clock_events():
    dev = Device(index=2, status="lost", clock_event_reasons=("sw_power_cap",),
                 processes=(Process(pid=7, user="alice", name="python", gpu_memory_mib=1.0),))
    from gputop.core.model import Hint
    snap = Snapshot(host="n", time=1.0, backend="sim", devices=(dev,),
                    hints=(Hint(device=2, code="power-capped", severity="warning", message="m"),))
    text = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    assert 'gputop_hint{hostname="n",gpu="2",code="power-capped",' \
           'severity="warning"} 1.0' in text
    assert 'status="lost"} 1.0' in text and 'status="ok"} 0.0' in text
    assert 'reason="sw_power_cap"} 1.0' in text and 'reason="gpu_idle"} 0.0' in text
    assert 'pid="7",user="alice",name="python"} 1.048576e+06' in text


@pytest.mark.parametrize("text, needle", [
    ("tls_server_config:\n  cert_file: nope.pem\n  key_file: nope.pem\n", "cannot load"),
    ("basic_auth_users:\n  alice: plain\n", "not a bcrypt hash"),
    ("tls_config: {}\n", "unknown setting 'tls_config'"),
    ("- a\n", "expected a mapping"),
])
def test_a_bad_web_config_is_one_clear_error(tmp_path: Path, text: str, needle: str):
    config = tmp_path / "web.yml"
    config.write_text(text)
    with pytest.raises(UsageError, match=needle):
        webconfig.load(str(config))


def _labels(line: str) -> dict[str, str]:
    inner = line.split("{", 1)[1].rsplit("}", 1)[0]
    return dict(part.split("=", 1) for part in inner.replace('"', "").split(","))


def test_mig_gpus_are_exported_per_gpu_instance_as_dcgm_exporter_does():
    snap = sim_snapshot("mig")
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    dev = snap.device(2)
    first = dev.mig_instances[0]
    used = [line for line in got["DCGM_FI_DEV_FB_USED"] if 'gpu="2"' in line]
    # one series per GPU instance, none for the parent, the MIG pair right after modelName
    assert len(used) == len({i.gpu_instance_id for i in dev.mig_instances})
    assert used[0] == (
        f'DCGM_FI_DEV_FB_USED{{gpu="2",UUID="{dev.uuid}",pci_bus_id="{dev.pci_bus_id}",'
        f'device="nvidia2",modelName="{dev.name}",GPU_I_PROFILE="{first.profile}",'
        f'GPU_I_ID="{first.gpu_instance_id}",hostname="{snap.host}",'
        f'DCGM_FI_DRIVER_VERSION="{snap.driver_version}"}} {float(first.memory_used_mib)}')
    for line in used:
        inst = next(i for i in dev.mig_instances
                    if str(i.gpu_instance_id) == _labels(line)["GPU_I_ID"])
        assert _labels(line)["GPU_I_PROFILE"] == inst.profile
        assert float(line.rsplit(" ", 1)[1]) == inst.memory_used_mib
        free = next(x for x in got["DCGM_FI_DEV_FB_FREE"] if x.split("}")[0] == line.split("}")[0]
                    .replace("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"))
        assert float(free.rsplit(" ", 1)[1]) == inst.memory_total_mib - inst.memory_used_mib
        sm = next(x for x in got["DCGM_FI_PROF_SM_ACTIVE"]
                  if 'gpu="2"' in x and f'GPU_I_ID="{inst.gpu_instance_id}"' in x)
        assert float(sm.rsplit(" ", 1)[1]) == pytest.approx(inst.saturation.sm_active_pct / 100)
        clock = next(x for x in got["DCGM_FI_DEV_SM_CLOCK"]
                     if 'gpu="2"' in x and f'GPU_I_ID="{inst.gpu_instance_id}"' in x)
        assert float(clock.rsplit(" ", 1)[1]) == dev.clock_sm_mhz  # the parent's, per instance
    mig_gpus = {str(d.index) for d in snap.devices if d.mig_instances}
    whole = {str(d.index) for d in snap.devices if not d.mig_instances}
    assert mig_gpus and whole
    for name, lines in got.items():
        if not name.startswith("DCGM_"):
            continue
        for line in lines:
            labels = _labels(line)
            assert ("GPU_I_ID" in labels) == (labels["gpu"] in mig_gpus), line
    # DCGM reports no utilization under MIG: none for a MIG GPU, one per whole GPU
    assert {_labels(x)["gpu"] for x in got["DCGM_FI_DEV_GPU_UTIL"]} == whole


def test_a_mig_process_series_names_its_instance():
    snap = sim_snapshot("mig")
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    for dev in snap.devices:
        for inst in dev.mig_instances:
            for proc in inst.processes:
                line = next(x for x in got["gputop_process_gpu_memory_bytes"]
                            if f'pid="{proc.pid}"' in x and f'gpu="{dev.index}"' in x)
                assert _labels(line)["GPU_I_PROFILE"] == inst.profile
                assert _labels(line)["GPU_I_ID"] == str(inst.gpu_instance_id)
    whole = next(x for x in got["gputop_process_gpu_memory_bytes"] if 'gpu="4"' in x)
    assert "GPU_I_ID" not in whole


def test_process_series_name_their_pod_container_and_slurm_job():
    from gputop.core.model import Container, Job

    pod = Process(pid=7, user="alice", name="python", gpu_memory_mib=1.0,
                  container=Container(runtime="containerd", id="ab" * 32, name="trainer",
                                      pod="bert-0", pod_namespace="ml", pod_uid="u" * 36))
    slurm = Process(pid=8, user="bob", name="python", gpu_memory_mib=2.0,
                    job=Job(scheduler="slurm", id="4242", step="0"))
    docker = Process(pid=9, user="carol", name="python", gpu_memory_mib=3.0,
                     container=Container(runtime="docker", id="cd" * 32))
    host = Process(pid=10, user="dave", name="python", gpu_memory_mib=4.0)
    snap = Snapshot(host="n", time=1.0, backend="nvml",
                    devices=(Device(index=0, processes=(pod, slurm, docker, host)),))
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    lines = {int(line.split('pid="')[1].split('"')[0]): line
             for line in got["gputop_process_gpu_memory_bytes"]}
    assert 'pod="bert-0",namespace="ml",container="trainer",hpc_job=""' in lines[7]
    assert 'pod="",namespace="",container="",hpc_job="4242"' in lines[8]
    assert 'container="cdcdcdcdcdcd"' in lines[9]
    assert 'pod="",namespace="",container="",hpc_job=""' in lines[10]


@pytest.mark.parametrize("scenario", sorted(
    p.stem for p in (Path(__file__).parents[3] / "gputop" / "data" / "scenarios").glob("*.toml")))
def test_every_scenarios_exposition_follows_the_field_table(scenario: str):
    """Each family is a table field under its type; a default field is served on a device
    exactly when the device reports it."""
    snap = sim_snapshot(scenario)
    text = exposition.render(collect.families(snap, own.Options(), "t")).decode()
    types = dict(line.split(" ")[2:4] for line in text.splitlines() if line.startswith("# TYPE "))
    dcgm_names = {n for n in types if n.startswith("DCGM_")}
    assert all(dcgm.BY_NAME[n].type == types[n] for n in dcgm_names)
    # DCGM's names only for GPUs that have NVIDIA's figures (the MI300X and Max 1550 have none)
    assert bool(dcgm_names) == any(map(dcgm.describes, snap.devices)), scenario
    got = samples(text.encode())
    for metric in dcgm.DEFAULT:
        if metric.label:
            continue
        served = {_labels(line)["gpu"] for line in got.get(metric.name, [])}
        reported = set()
        for dev in filter(dcgm.describes, snap.devices):
            parts = dcgm.gpu_instances(dev) if dev.mig_instances else [None]
            if any(dcgm.value(metric.field, snap, dev, inst) is not None for inst in parts):
                reported.add(str(dev.index))
        assert served == reported, (scenario, metric.name)
