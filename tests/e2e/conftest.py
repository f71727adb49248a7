"""Every test under tests/e2e starts a real component (sshd, Prometheus, Slurm, Chromium, tmux,
a gputop process, a server on 127.0.0.1, a cgroup or namespace lab): each is marked `e2e` here,
so none can forget it and `pytest -m "not e2e"` is the quick inner loop.

They run in two xdist groups, each one test after another on one worker. The tests that time
what a person sees (the dashboard in tmux, the web view in Chromium, the advisor's sweeps, the
suite's own hygiene and call budget, the fake NVML's idle windows) form one, ``e2e``; the labs
that serve and scrape (Prometheus, exporters, ssh and Slurm clusters, the nvidia-smi faces, the
backends' tools) the other, ``e2e-labs``, which the second worker runs once the unit tests are
done. At most two e2e tests share the machine, one of each kind: the labs' timeouts are seconds
where their answers take milliseconds, and keeping them off the first group's worker halves the
suite's wall time on two cores."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# Folders (under tests/e2e) whose tests time what a person sees; the rest are labs. A test file
# directly under tests/e2e is in the first group too (the suite's hygiene and call budget).
TIMED = frozenset({"tui", "web", "advisor", "analysis"})


def group_of(path: Path) -> str:
    """Return the xdist group of the e2e test file at ``path``."""
    folder = path.resolve().relative_to(HERE).parts
    return "e2e" if len(folder) == 1 or folder[0] in TIMED else "e2e-labs"


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group from its marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test collected from this folder `e2e`, in its xdist group (``group_of``)."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.xdist_group(group_of(item.path)))
