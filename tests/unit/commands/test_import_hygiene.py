"""Only the TUI imports Textual: the other commands must start fast (cf. harlequin's test)."""

import subprocess
import sys

import pytest

from tests.support.paths import ROOT

PROBE = """
import sys, io, contextlib
from gputop.commands.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main({argv!r})
heavy = sorted(m for m in ("textual", "plotext", "rich", "textual_serve", "aiohttp")
               if m in sys.modules)
print(code, ",".join(heavy) or "-")
"""

COMMANDS = [
    ["snapshot", "--json", "--backend", "sim"],
    ["snapshot", "--backend", "sim"],
    ["--backend", "sim", "--query-gpu=index,name,power.draw", "--format=csv"],
    ["--backend", "sim", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
    ["advise", "--backend", "sim", "--sim-speed", "100", "--window", "5"],
    ["--help"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_non_tui_commands_never_import_textual(argv):
    r = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                       text=True, timeout=60)
    if argv == ["--help"]:  # argparse exits through SystemExit before the probe prints
        assert "textual" not in r.stdout
        return
    code, heavy = r.stdout.split()[-2:]
    assert code == "0", r.stderr
    assert heavy == "-", f"{argv} imported {heavy}"


def test_only_the_web_server_imports_textual_serve_or_aiohttp():
    """textual-serve and aiohttp are the web command's, imported when it runs (gputop.web.server)."""
    import re

    package = ROOT / "gputop"
    pattern = re.compile(r"^\s*(from|import)\s+(textual_serve|aiohttp)\b", re.M)
    importers = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                       if pattern.search(p.read_text(encoding="utf-8")))
    assert importers == ["tui/web.py"], importers
