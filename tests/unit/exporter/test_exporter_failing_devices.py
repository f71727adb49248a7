"""A device whose reads fail, or a sample that fails, is reported as failing from the next
sample: its status series, /health 503 naming it, and no stale snapshot served as current."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.npu_smi.backend import NpuSmiBackend
from gputop.backends.nvml.backend import NvmlBackend
from gputop.exporter import own, server
from gputop.sampler import Sampler
from tests.support.fake_pynvml import FakeNvml, node
from tests.support.hostile_serving import snapshot, wait_until
from tests.support.npu_smi import FakeNpuSmi
from tests.support.npu_smi_expected import T_910B4


def test_a_device_not_ok_turns_health_503_and_shows_in_the_status_series():
    latest = server.Latest(own.Options(), "t")
    latest.publish(snapshot("error"))
    status, body, _ = latest.answer("/health", 60.0)
    assert status == 503 and body.startswith(b"GPU 0 error")
    status, body, _ = latest.answer("/metrics", 60.0)
    assert status == 200 and b'status="error"} 1.0' in body and b'status="ok"} 0.0' in body


def test_a_failed_sample_or_a_stale_snapshot_is_not_served_as_current():
    now = [100.0]
    latest = server.Latest(own.Options(), "t", clock=lambda: now[0])
    latest.publish(snapshot())
    assert latest.answer("/metrics", 5.0)[0] == 200
    now[0] += 6  # the sampler is stuck in a driver call
    assert latest.answer("/metrics", 5.0)[:2] == (503, b"last snapshot 6 s ago\n")
    assert latest.answer("/health", 5.0)[0] == 503
    latest.publish(snapshot())
    latest.failed(RuntimeError("the driver went away"))  # the next sample failed as a whole
    assert latest.answer("/metrics", 5.0)[:2] == (503, b"sampling failed: the driver went away\n")
    assert latest.answer("/health", 5.0)[0] == 503


@pytest.fixture
def fake_npu_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNpuSmi:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeNpuSmi(folder)


@pytest.mark.parametrize("failure, reason", [
    ({"rc": 1, "stderr": "dcmi module initialize failed\n"}, "exited with status 1"),
    ({"stdout": "\x00\x01garbage\n"}, "line 1"),
    ({"file": T_910B4, "delay": 30}, "did not answer within 0.5 s"),
], ids=["failing", "garbage", "hanging"])
def test_npu_smi_failing_shows_from_the_next_sample(fake_npu_smi, failure, reason):
    fake_npu_smi.set([("info", {"file": T_910B4})])
    backend = NpuSmiBackend(BackendOptions(), refresh_s=0.1, enrich_s=600, timeout_s=0.5)
    backend.open()
    interval = 0.2
    sampler = Sampler(backend, interval=interval)
    latest = server.Latest(own.Options(), "t")
    sampler.subscribe(latest.publish, latest.failed)
    sampler.start()
    try:
        assert wait_until(lambda: latest.answer("/health", 5.0)[0] == 200, 3)
        fake_npu_smi.set([("info", failure)])
        # The backend learns of the failure when the read fails (at once, or at the time-out);
        # the exporter says so from the sample after that.
        assert wait_until(lambda: backend.sample().devices[0].status == "error", 3)
        failed_at = time.monotonic()
        assert wait_until(lambda: latest.answer("/health", 5.0)[0] == 503, 2 * interval + 0.3)
        assert time.monotonic() - failed_at <= 2 * interval + 0.3
        status, body, _ = latest.answer("/health", 5.0)
        assert reason.encode() in body
        metrics = latest.answer("/metrics", 5.0)[1].decode()
        assert 'status="ok"} 1.0' not in metrics
        assert metrics.count('status="error"} 1.0') == 8
        assert "gputop_device_data_age_seconds{" in metrics
        # npu-smi answers again: ok from the next sample on.
        fake_npu_smi.set([("info", {"file": T_910B4})])
        assert wait_until(lambda: latest.answer("/health", 5.0)[0] == 200, 3)
    finally:
        sampler.stop()
        backend.close()


def test_an_nvml_device_whose_reads_fail_shows_from_the_same_sample():
    fake = FakeNvml(node(2))
    backend = NvmlBackend(BackendOptions(), nvml=fake)
    backend.open()
    try:
        latest = server.Latest(own.Options(), "t")
        latest.publish(backend.sample())
        assert latest.answer("/health", 60.0)[0] == 200
        fake.fail("nvmlDeviceGetUtilizationRates", 999, device=1)  # NVML_ERROR_UNKNOWN
        latest.publish(backend.sample())
        status, body, _ = latest.answer("/health", 60.0)
        assert status == 503 and body.startswith(b"GPU 1 error (NVML: Unknown Error)")
        metrics = latest.answer("/metrics", 60.0)[1].decode()
        assert 'gpu="1",' in metrics and metrics.count('status="error"} 1.0') == 1
    finally:
        backend.close()
