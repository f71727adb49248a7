"""Simulated data never reaches a script that asked for a device.

Where no device answers, every script-facing command fails as nvidia-smi does without a driver:
one line naming the reason, nvidia-smi's exit code for it. Only the dashboard falls back to the
simulator, and says so. ``--backend sim`` keeps working everywhere, marked as such.
"""

from __future__ import annotations

import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions, NoDevice
from gputop.commands.main import main
from tests.support.fake_pynvml import FakeNvml, install, node
from tests.support.no_device import SCRIPT_COMMANDS, assert_no_readings

DRIVER_NOT_LOADED = 9


@pytest.mark.parametrize("argv", SCRIPT_COMMANDS.values(), ids=SCRIPT_COMMANDS.keys())
def test_nvml_init_error_is_nvidia_smis_exit_code(monkeypatch, capsys, argv):
    fake = install(monkeypatch, FakeNvml(node(2)))
    fake.init_error = DRIVER_NOT_LOADED
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(argv) == 9  # nvidia-smi: NVIDIA driver is not loaded
    out, err = capsys.readouterr()
    assert_no_readings(argv, out)
    assert err == "gputop: no GPU or NPU answered: NVML: NVIDIA driver not loaded\n"


def test_the_policy_is_one_flag_of_open_backend(monkeypatch):
    install(monkeypatch, FakeNvml(node(1))).init_error = DRIVER_NOT_LOADED
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(NoDevice) as caught:
        open_backend("auto", BackendOptions())
    assert caught.value.exit_code == 9
    backend = open_backend("auto", BackendOptions(), simulate_if_absent=True)
    try:
        assert backend.name == "sim"
        assert backend.fallback_reason == "NVML: NVIDIA driver not loaded"
    finally:
        backend.close()


def test_the_dashboard_alone_falls_back_and_says_so(monkeypatch):
    """run_dashboard opens auto with the fallback allowed; the app shows the reason."""
    import gputop.tui.app as app_module

    install(monkeypatch, FakeNvml(node(1))).init_error = DRIVER_NOT_LOADED
    monkeypatch.setenv("PATH", "/nonexistent")
    seen = {}

    class Recorder:
        def __init__(self, backend, **kw):
            seen["backend"] = backend.name
            seen["reason"] = backend.fallback_reason
            self.return_code = 0

        def run_until_stopped(self, lifeline):  # TerminalApp's way to run
            return self.return_code

    monkeypatch.setattr(app_module, "GputopApp", Recorder)
    from gputop.commands import dashboard

    monkeypatch.setattr(dashboard, "has_terminal", lambda: True)  # as on a terminal
    assert main([]) == 0
    assert seen == {"backend": "sim", "reason": "NVML: NVIDIA driver not loaded"}


