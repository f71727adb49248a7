"""A device whose reads fail, or a sample that fails, is reported as failing from the next
sample: its status series, /health 503 naming it, and no stale snapshot served as current."""

from __future__ import annotations

from gputop.backends.base import BackendOptions
from gputop.backends.nvml.backend import NvmlBackend
from gputop.exporter import own, server
from tests.support.fake_pynvml import FakeNvml, node
from tests.support.hostile_serving import snapshot


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
