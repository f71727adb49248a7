"""Where this checkout is, and how a test runs its gputop in a subprocess."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SUPPORT = ROOT / "tests" / "support"


def gputop_cmd(*args: str) -> list[str]:
    """Return the argv that runs this checkout's gputop in a subprocess."""
    return [sys.executable, "-m", "gputop", *args]
