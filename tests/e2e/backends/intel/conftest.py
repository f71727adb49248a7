"""The fake xpu-smi on PATH the xpu-smi backend tests share."""

from tests.support.xpu_smi import fake_xpu_smi_fixture  # noqa: F401 - the `fake_xpu_smi` fixture
