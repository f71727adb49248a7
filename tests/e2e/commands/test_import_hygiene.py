"""Only the TUI imports Textual: the other commands must start fast (cf. harlequin's test).

The source is fenced by the import-linter contracts in pyproject.toml (run here and by .ci/run);
the probes below check the modules as they run, lazy imports included."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

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


# The import-linter contracts in pyproject.toml (the fences of issue #25), each named by its id,
# with one import that breaks it and nothing else: (module under gputop/, text appended to it).
BREACHES = {
    "layers": ("formats/dcgm.py", "from gputop.host import owners"),  # host is above formats
    "commands": ("commands/query.py", "from gputop.commands import web"),  # web is above query
    "acyclic": ("tui/screens/modals.py", "import gputop.tui.app"),  # app imports the screens
    "backends": ("backends/sim/backend.py", "from gputop.backends.nvml import backend"),
    "textual": ("analysis/hints.py", "import rich"),
    "web-server": ("tui/themes.py", "import aiohttp"),
}
# A room no layer names breaks the layers contract too (it is exhaustive).
UNDECLARED_ROOM = ("plugins/__init__.py", "")
# lint-imports itself, run by the Python running the tests (whose venv has import-linter).
LINT_IMPORTS = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def lint_imports(root: Path) -> dict[str, str]:
    """Run lint-imports on the package under ``root`` and return each contract's verdict by name."""
    r = subprocess.run([sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"], cwd=root,
                       env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                       timeout=120)
    verdicts = dict(re.findall(r"^(.+) (KEPT|BROKEN)$", r.stdout, re.M))
    assert verdicts and r.returncode == (1 if "BROKEN" in verdicts.values() else 0), \
        r.stdout + r.stderr
    return verdicts


def contract_names() -> dict[str, str]:
    """Each import-linter contract's name by its id, as pyproject.toml declares them."""
    with (ROOT / "pyproject.toml").open("rb") as fh:
        contracts = tomllib.load(fh)["tool"]["importlinter"]["contracts"]
    return {c["id"]: c["name"] for c in contracts}


def test_every_import_contract_is_kept():
    """The layers, the entry point on top, no import circle, the backends' independence and the
    rooms of Textual, textual-serve and aiohttp hold for the package as it is (this replaced the
    tests that grepped imports)."""
    names = contract_names()
    assert sorted(names) == sorted(BREACHES)
    assert lint_imports(ROOT) == {name: "KEPT" for name in names.values()}


@pytest.mark.parametrize("case", [*BREACHES, "undeclared room"])
def test_an_import_across_a_fence_breaks_that_contract_only(case, tmp_path):
    """A copy of the package with one bad import (or one undeclared room) fails lint-imports on
    exactly the contract that forbids it, so the test above can fail."""
    shutil.copytree(ROOT / "gputop", tmp_path / "gputop",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    module, line = UNDECLARED_ROOM if case == "undeclared room" else BREACHES[case]
    path = tmp_path / "gputop" / module
    path.parent.mkdir(exist_ok=True)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(before + line + "\n", encoding="utf-8")
    names = contract_names()
    broken = names["layers" if case == "undeclared room" else case]
    assert lint_imports(tmp_path) == {name: "BROKEN" if name == broken else "KEPT"
                                      for name in names.values()}
