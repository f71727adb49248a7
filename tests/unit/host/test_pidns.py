"""A GPU's device minor, read from the driver's file for its bus id."""

from __future__ import annotations

from gputop.host import pidns
from tests.support.device_node import BUS, driver_fixture  # noqa: F401 - the `driver` fixture


def test_device_minor_from_the_driver_file(driver):
    root, paths = driver
    assert pidns.device_minor(BUS, paths.driver_info) == 3
    assert pidns.device_minor("00000000:99:00.0", paths.driver_info) is None
    assert pidns.device_minor(None, paths.driver_info) is None
