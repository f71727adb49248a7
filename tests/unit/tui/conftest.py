"""Fixtures the dashboard tests share."""

import subprocess
import sys

import pytest


@pytest.fixture
def child():
    """Start a real local process for the dashboard to signal; kill it afterwards if it lives."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()
