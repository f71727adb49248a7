"""Every test under tests/e2e starts a real component (sshd, Prometheus, Slurm, Chromium, tmux,
a gputop process, a server on 127.0.0.1, a cgroup or namespace lab): each is marked `e2e` here,
so none can forget it and `pytest -m "not e2e"` is the quick inner loop. They share one xdist
group, so they run one after another on one worker: their timings and labs assume a quiet
machine."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group from its marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test collected from this folder `e2e`, in the one xdist group "e2e"."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group("e2e"))
