"""A fake npu-smi that fails, prints garbage or hangs: the exporter reports its devices failing
from the next sample (/health 503 naming why, status series), and ok again once it answers."""

from __future__ import annotations

import time

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.npu_smi.backend import NpuSmiBackend
from gputop.exporter import own, server
from gputop.sampler import Sampler
from tests.support.hostile_serving import wait_until
from tests.support.npu_smi import fake_npu_smi_fixture  # noqa: F401 - `fake_npu_smi`
from tests.support.npu_smi_expected import T_910B4


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


