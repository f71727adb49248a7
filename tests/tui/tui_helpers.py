"""Fixtures shared by the dashboard tests, imported by name (no second conftest.py: a module
named `conftest` here would shadow tests/conftest.py for tests that import from it)."""

import os
import time

import pytest


@pytest.fixture(autouse=True, name="utc")
def utc_fixture(monkeypatch):
    """Clock text in the header and details is local time: make it the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    time.tzset()


@pytest.fixture(autouse=True, name="no_user_themes")
def no_user_themes_fixture(monkeypatch, tmp_path):
    """Tests never read the developer's own ~/.config/gputop/themes, nor the advisor journals in
    their ~/.local/state/gputop (the dashboard warns of those at start)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    os.makedirs(tmp_path / "config", exist_ok=True)
