"""Every JSON document gputop writes refuses NaN and Infinity at the source: all writing goes
through gputop/core/jsonout.py (``allow_nan=False``), and no module calls json.dump(s) itself."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from gputop.core import jsonout
from tests.support.paths import ROOT

PACKAGE = ROOT / "gputop"


def json_dump_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("dump", "dumps") and isinstance(node.func.value, ast.Name) and \
                node.func.value.id == "json":
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
        if isinstance(node, ast.ImportFrom) and node.module == "json" and \
                any(a.name in ("dump", "dumps") for a in node.names):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} (from json import)")
    return found


def test_no_module_writes_json_but_jsonout():
    calls = [c for p in sorted(PACKAGE.rglob("*.py")) if p.name != "jsonout.py"
             for c in json_dump_calls(p)]
    assert calls == [], "write JSON through gputop.core.jsonout (allow_nan=False): " + ", ".join(calls)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused_and_nothing_is_written(bad, tmp_path):
    with pytest.raises(ValueError):
        jsonout.dumps({"power_draw_w": bad})
    with (tmp_path / "out.json").open("w") as fh:
        with pytest.raises(ValueError):
            jsonout.dump({"ok": 1, "devices": [{"power_draw_w": bad}]}, fh)
    assert (tmp_path / "out.json").read_text() == ""
