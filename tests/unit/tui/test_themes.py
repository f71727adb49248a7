import pytest

from gputop.core.errors import UsageError
from gputop.tui import themes


def test_at_least_four_shipped_themes_each_defining_every_app_variable():
    shipped = themes.shipped_themes()
    names = [t.name for t in shipped]
    assert names[:4] == ["dark", "light", "high-contrast", "ansi"]
    for theme in shipped:
        assert set(themes.APP_VARIABLES) <= set(theme.variables), theme.name
    assert next(t for t in shipped if t.name == "ansi").ansi is True
    assert next(t for t in shipped if t.name == "light").dark is False


def test_theme_files_define_the_variables_themselves(tmp_path):
    # Falling back to defaults would hide a theme that forgot a colour: the files are complete.
    import sys

    from gputop.core import datafiles

    tomllib = __import__("tomllib" if sys.version_info >= (3, 11) else "tomli")
    root = datafiles.DATA / "themes"
    for entry in root.iterdir():
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            missing = set(themes.APP_VARIABLES) - set(data["variables"])
            assert not missing, (entry.name, missing)


def test_user_themes_come_from_xdg_config_home(tmp_path, monkeypatch):
    folder = tmp_path / "cfg" / "gputop" / "themes"
    folder.mkdir(parents=True)
    (folder / "mine.toml").write_text('name = "mine"\n[colors]\nprimary = "#ff0000"\n'
                                      '[variables]\ngauge-low = "#00ff00"\n')
    (folder / "broken.toml").write_text('name = "broken"\n[colors]\nprimary = "not-a-colour"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert themes.user_theme_dir() == folder
    found, warnings = themes.all_themes()
    mine = next(t for t in found if t.name == "mine")
    assert mine.variables["gauge-low"] == "#00ff00"
    assert mine.variables["gauge-high"] == themes.APP_VARIABLES["gauge-high"]
    assert len(warnings) == 1 and "broken.toml" in warnings[0] and "not-a-colour" in warnings[0]


def test_bad_theme_documents_are_refused_with_a_reason():
    with pytest.raises(UsageError, match="needs at least 'primary'"):
        themes.parse_theme({"colors": {}}, "x.toml", "x")
    with pytest.raises(UsageError, match="unknown colour key"):
        themes.parse_theme({"colors": {"primary": "#fff", "purple": "#fff"}}, "x.toml", "x")
