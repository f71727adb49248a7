"""The kernel lab the attribution tests share: real cgroups named as each runtime names them."""

from tests.support.kernel_lab import lab_fixture  # noqa: F401 - the `lab` fixture
