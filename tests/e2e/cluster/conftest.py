"""The SSH lab the cluster tests share: built once a session (sshd on its own ports)."""

from tests.support.cluster_lab import lab_fixture  # noqa: F401 - the `lab` fixture
