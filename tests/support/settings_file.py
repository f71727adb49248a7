"""The dashboard's settings file in a test's own config folder."""

from pathlib import Path

import pytest


def write_settings(folder: Path, text: str) -> Path:
    """Write ``text`` as the settings file under the config folder ``folder``; return its path."""
    path = folder / "gputop" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(name="config_home")
def config_home_fixture(tmp_path, monkeypatch) -> Path:
    """Make the test's folder $XDG_CONFIG_HOME and return it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path
