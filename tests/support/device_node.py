"""A GPU's driver file and device node under a test's own folder, for the PID-namespace tests."""

import pytest

from gputop.host.processes import DevicePaths

BUS = "00000000:18:00.0"


@pytest.fixture(name="driver")
def driver_fixture(tmp_path):
    """Write the driver's file for GPU `BUS` (device minor 3) and its node; return both paths."""
    info = tmp_path / "gpus" / "0000:18:00.0"
    info.mkdir(parents=True)
    (info / "information").write_text("Device Minor: 3\n")
    node = tmp_path / "nvidia3"
    node.touch()
    return tmp_path, DevicePaths(driver_info=str(tmp_path / "gpus"),
                                 device_node=str(tmp_path / "nvidia{minor}"))
