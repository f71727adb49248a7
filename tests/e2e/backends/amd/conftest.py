"""The fake amd-smi and rocm-smi on PATH the AMD tool backends' tests share."""

from tests.support.amd_smi import fake_amd_smi_fixture  # noqa: F401 - the `fake_amd_smi` fixture
from tests.support.rocm_smi import fake_rocm_smi_fixture  # noqa: F401 - `fake_rocm_smi`
