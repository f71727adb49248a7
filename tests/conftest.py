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
