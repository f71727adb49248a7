"""The fake npu-smi on PATH the backend tests share."""

from tests.support.npu_smi import fake_npu_smi_fixture  # noqa: F401 - the `fake_npu_smi` fixture
