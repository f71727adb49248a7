"""`gputop cluster --theme NAME`, as a process, names a user's theme file of that name that cannot
be used, and why."""

from __future__ import annotations

import sys


def test_the_cluster_view_says_why_a_users_theme_of_that_name_failed(tmp_path):
    """`gputop cluster --theme NAME` as the dashboard: a user's theme file of that name that
    cannot be used is named with why, not called unknown."""
    import subprocess

    folder = tmp_path / "cfg" / "gputop" / "themes"
    folder.mkdir(parents=True)
    (folder / "bad.toml").write_text('name = "bad"\n[colors\nprimary = "#ffffff"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "gputop", "cluster", "--theme", "bad",
                          "node-a"], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 2
    assert "bad.toml: not valid TOML" in out.stderr and "unknown theme" not in out.stderr
