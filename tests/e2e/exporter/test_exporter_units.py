"""The exporter served on 127.0.0.1 without Prometheus (scrapes never reach the device, basic auth
and TLS from a web config), and `gputop exporter` as a process: bad options, no device, no
Textual."""

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
from gputop.exporter import own, server, webconfig
from gputop.sampler import Sampler
from tests.support.demo import sim_snapshot
from tests.support.prom_harness import ROOT, find, get


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


