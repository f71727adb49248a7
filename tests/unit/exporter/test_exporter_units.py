"""The exporter without Prometheus: what it emits for a snapshot, and how it serves it."""

from __future__ import annotations

import base64
import subprocess
import sys
import threading
from pathlib import Path

import bcrypt
import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.core.budget import EVERYTHING
from gputop.core.errors import UsageError
from gputop.core.model import Device, Process, Snapshot
from gputop.exporter import collect, exposition, own, server, webconfig
from gputop.formats import dcgm
from gputop.sampler import Sampler
from tests.support.prom_harness import ROOT, find, get


def sim_snapshot(scenario: str = "training") -> Snapshot:
    backend = SimBackend(BackendOptions(scenario=scenario, seed=1))
    backend.open()
    try:
        return backend.sample()
    finally:
        backend.close()


def samples(body: bytes) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            out.setdefault(name, []).append(line)
    return out


def test_the_simulator_fills_every_dcgm_metric_on_every_gpu():
    body = exposition.render(collect.families(sim_snapshot(), own.Options(), "t"))
    got = samples(body)
    for metric in dcgm.METRICS:
        assert len(got.get(metric.name, [])) == 8, metric.name


def test_a_value_the_device_does_not_report_is_absent_not_zero():
    dev = Device(index=0, uuid="GPU-x", name="T", pci_bus_id="00000000:01:00.0", vendor="nvidia",
                 temperature_c=None, power_draw_w=250.0)
    snap = Snapshot(host="n", time=1.0, backend="nvml", devices=(dev,))
    got = samples(exposition.render(collect.families(snap, own.Options(), "t")))
    assert got["DCGM_FI_DEV_POWER_USAGE"] == [
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-x",pci_bus_id="00000000:01:00.0",'
        'device="nvidia0",modelName="T",Hostname="n",hostname="n",DCGM_FI_DRIVER_VERSION=""}'
        ' 250.0']
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
    opts = own.Options(hostname_labels=("hostname",), top_processes=3)
    text = exposition.render(collect.families(snap, opts, "t")).decode()
    got = samples(text.encode())
    assert len(got["gputop_process_gpu_memory_bytes"]) == 8 * 3
    assert "Hostname=" not in text and 'hostname="' in text
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
    assert 'gputop_hint{Hostname="n",hostname="n",gpu="2",code="power-capped",' \
           'severity="warning"} 1.0' in text
    assert 'status="lost"} 1.0' in text and 'status="ok"} 0.0' in text
    assert 'reason="sw_power_cap"} 1.0' in text and 'reason="gpu_idle"} 0.0' in text
    assert 'pid="7",user="alice",name="python"} 1.048576e+06' in text


class CountingSim(SimBackend):
    calls = 0

    def sample(self, devices=None, *, wants=EVERYTHING):
        CountingSim.calls += 1
        return super().sample(devices, wants=wants)


@pytest.fixture
def served():
    backend = CountingSim(BackendOptions(seed=1))
    backend.open()
    sampler = Sampler(backend, interval=1.0)
    latest = server.Latest(own.Options(), "t")
    sampler.subscribe(latest.publish, latest.failed)
    httpd = server.serve("127.0.0.1", 0, latest, webconfig.WebConfig(), stale_after=5.0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield sampler, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        backend.close()


def test_a_scrape_never_reaches_the_device_and_health_waits_for_a_snapshot(served):
    sampler, url = served
    assert get(f"{url}/health")[0] == 503
    assert get(f"{url}/metrics")[0] == 503
    CountingSim.calls = 0
    sampler.tick()
    bodies = {get(f"{url}/metrics")[1] for _ in range(20)}
    assert CountingSim.calls == 1
    assert len(bodies) == 1 and b"DCGM_FI_DEV_GPU_UTIL{" in bodies.pop()
    assert get(f"{url}/health") == (200, b"OK\n")


def test_basic_auth_from_a_web_config(tmp_path: Path):
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    config = tmp_path / "web.yml"
    config.write_text(f"basic_auth_users:\n  alice: {hashed}\n")
    web = webconfig.load(str(config))
    latest = server.Latest(own.Options(), "t")
    latest.publish(sim_snapshot())
    httpd = server.serve("127.0.0.1", 0, latest, web, stale_after=5.0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/metrics"
    try:
        def auth(user: str, password: str) -> dict[str, str]:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            return {"Authorization": f"Basic {token}"}

        assert get(url)[0] == 401
        assert get(url, headers=auth("alice", "wrong"))[0] == 401
        assert get(url, headers=auth("bob", "s3cret"))[0] == 401
        assert get(url, headers=auth("alice", "s3cret"))[0] == 200
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_tls_from_a_web_config(tmp_path: Path):
    import ssl

    subprocess.run([find("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                    "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem")],
                   check=True, capture_output=True)
    (tmp_path / "web.yml").write_text(
        "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n  min_version: TLS12\n")
    web = webconfig.load(str(tmp_path / "web.yml"))
    latest = server.Latest(own.Options(), "t")
    latest.publish(sim_snapshot())
    httpd = server.serve("127.0.0.1", 0, latest, web, stale_after=5.0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    try:
        context = ssl.create_default_context(cafile=str(tmp_path / "c.pem"))
        status, body = get(f"https://127.0.0.1:{port}/metrics", context=context)
        assert status == 200 and b"DCGM_FI_DEV_GPU_UTIL" in body
    finally:
        httpd.shutdown()
        httpd.server_close()


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


@pytest.mark.parametrize("argv, needle", [
    (["--listen", "nope"], "--listen: expected ADDR:PORT"),
    (["--backend", "sim", "--top-processes", "-1"], "--top-processes: expected a whole number from 0 to 1000"),
    (["--backend", "sim", "--web-config", "/nonexistent/web.yml"], "web config"),
])
def test_bad_exporter_options_get_one_line(argv, needle):
    out = subprocess.run([sys.executable, "-m", "gputop", "exporter", *argv], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode != 0
    assert needle in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_auto_without_a_device_does_not_serve_the_simulator():
    out = subprocess.run([sys.executable, "-m", "gputop", "exporter", "--backend", "auto",
                          "--listen", "127.0.0.1:0"], cwd=ROOT, capture_output=True, text=True,
                         timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 12  # nvidia-smi: NVML shared library not found
    assert "no GPU or NPU answered" in out.stderr and "Traceback" not in out.stderr


def test_the_exporter_and_the_prometheus_transport_never_import_textual():
    probe = ("import sys\n"
             "from gputop.commands import exporter\n"
             "from gputop.exporter import collect, server, webconfig\n"
             "from gputop.cluster import prometheus\n"
             "from gputop.commands.main import build_parser\n"
             "build_parser()\n"
             "print(sorted(m for m in ('textual', 'plotext', 'rich') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


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
        f'GPU_I_ID="{first.gpu_instance_id}",Hostname="{snap.host}",hostname="{snap.host}",'
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
