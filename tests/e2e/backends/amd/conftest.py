"""The fake amd-smi on PATH the amd-smi backend tests share."""

from tests.support.amd_smi import fake_amd_smi_fixture  # noqa: F401 - the `fake_amd_smi` fixture
