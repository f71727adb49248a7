import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def gputop_cmd(*args: str) -> list[str]:
    """argv that runs this checkout's gputop in a subprocess."""
    return [sys.executable, "-m", "gputop", *args]


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch, tmp_path_factory):
    """No test reads the developer's own ~/.config/gputop (settings file, themes): the config
    folder is an empty one of the test's own, and $GPUTOP_CONFIG is unset (subprocesses too)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("GPUTOP_CONFIG", raising=False)
