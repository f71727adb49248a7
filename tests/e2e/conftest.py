"""Every test under tests/e2e starts a real component (sshd, Prometheus, Slurm, Chromium, tmux,
a gputop server, a cgroup or namespace lab): each is marked `e2e` here, so none can forget it and
`pytest -m "not e2e"` is the quick inner loop."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test collected from this folder `e2e`."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)
