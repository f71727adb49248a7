"""Every numeric option and environment value of every command against hostile numbers.

Each bad value is one line on stderr naming the option and its range, exit 2, no traceback, and
at once: nothing is opened or sampled first. The ranges are gputop.core.bounds; docs/reference/limits.md's table
lists the same ones.
"""

from __future__ import annotations

import contextlib
import io
import time

import pytest

from gputop.commands.main import main
from gputop.core import bounds
from tests.support.paths import ROOT

HOSTILE = ["inf", "nan", "1e309", "1e-320", "-1", "0", "", "99999999999999999999999999",
           "-inf", "1e3x", "9" * 5000]

Q = ["--backend", "sim", "--query-gpu=index", "--format=csv"]
SIM = ["--backend", "sim"]
# (argv before the value, the option, the argv after it, its bound)
OPTIONS = [
    ([*SIM, "snapshot"], "--interval", [], bounds.INTERVAL),
    ([*SIM], "--interval", [], bounds.INTERVAL),  # the dashboard's, parsed before it opens
    ([*SIM, "agent"], "--interval", [], bounds.INTERVAL),
    ([*SIM, "advise"], "--interval", [], bounds.INTERVAL),
    ([*SIM, "snapshot"], "--sim-speed", [], bounds.SIM_SPEED),
    ([*SIM, "snapshot"], "--seed", [], bounds.SEED),
    ([*SIM, "snapshot"], "--window", [], bounds.SNAPSHOT_WINDOW),
    (Q, "-l", [], bounds.LOOP_S),
    (Q, "-lms", [], bounds.LOOP_MS),
    (Q, "--interval", [], bounds.INTERVAL),
    (Q, "--sim-speed", [], bounds.SIM_SPEED),
    (["replay", "log.csv"], "--speed", [], bounds.REPLAY_SPEED),
    ([*SIM, "agent"], "--count", [], bounds.AGENT_COUNT),
    (["cluster", "node1", "--once"], "--connect-timeout", [], bounds.CONNECT_TIMEOUT),
    (["cluster", "node1", "--once"], "--timeout", [], bounds.ONCE_TIMEOUT),
    (["cluster", "node1", "--once"], "--max-opening", [], bounds.MAX_OPENING),
    ([*SIM, "exporter", "--listen", "127.0.0.1:0"], "--top-processes", [],
     bounds.EXPORTER_TOP_PROCESSES),
    ([*SIM, "web", "--listen", "127.0.0.1:0"], "--max-viewers", [], bounds.WEB_MAX_VIEWERS),
    ([*SIM, "advise"], "--window", [], bounds.ADVISE_WINDOW),
    ([*SIM, "advise", "--sweep"], "--step", [], bounds.ADVISE_STEP),
    ([*SIM, "advise", "--sweep"], "--settle", [], bounds.ADVISE_SETTLE),
    ([*SIM, "advise", "--sweep"], "--measure", [], bounds.ADVISE_MEASURE),
    ([*SIM, "advise", "--sweep"], "--max-slowdown", [], bounds.ADVISE_MAX_SLOWDOWN),
    ([*SIM, "advise", "--sweep"], "--eta", [], bounds.ADVISE_ETA),
    ([*SIM, "advise", "--sweep"], "--lowest", [], bounds.ADVISE_LOWEST),
    ([*SIM, "advise", "--run", "true"], "--repeat", [], bounds.ADVISE_REPEAT),
]


def run_inline(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse leaves through parser.exit
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def accepted(bound: bounds.Bound, text: str) -> bool:
    return bound.problem(text) is None


@pytest.mark.parametrize("before,option,after,bound", OPTIONS,
                         ids=[f"{' '.join(b[:3])} {o}" for b, o, _, _ in OPTIONS])
def test_every_hostile_number_is_one_line_and_exit_2(before, option, after, bound):
    for value in HOSTILE:
        if accepted(bound, value):  # "0" is a fine --window, --settle, --count or --eta
            continue
        started = time.monotonic()
        code, out, err = run_inline([*before, f"{option}={value}", *after])
        assert time.monotonic() - started < 5, (option, value)
        assert code == 2, (option, value, err)
        assert out == "" and "Traceback" not in err
        lines = err.splitlines()
        assert len(lines) == 1, (option, value, err)
        assert option in lines[0] and bound.describe() in lines[0], lines[0]


@pytest.mark.parametrize("bound", bounds.ALL, ids=lambda b: b.name)
def test_each_bound_refuses_the_matrix_and_keeps_its_ends(bound):
    for value in ["inf", "nan", "1e309", "-1", "", "99999999999999999999999999", "1e-320"]:
        if value == "1e-320" and bound.low == 0 and not bound.integer:
            continue  # a tiny positive window or settle time is harmless
        if value == "1e-320" and bound.integer:
            assert bound.problem(value) is not None
            continue
        assert bound.problem(value) is not None, (bound.name, value)
    assert bound.problem(str(int(bound.low) if bound.integer else bound.low)) is None
    assert bound.problem(str(int(bound.high) if bound.integer else bound.high)) is None


def test_the_limits_page_lists_every_bound_with_its_range():
    page = (ROOT / "docs" / "reference" / "limits.md").read_text(encoding="utf-8")
    for bound in bounds.ALL:
        row = f"| `{bound.name}` | {bound.describe()} |"
        assert row in page, f"docs/reference/limits.md's bad-input table lacks: {row}"


def test_device_ids_named_twice_or_empty_are_one_line():
    for ids in ["0,0", "0,,1", ",", "GPU-ab,gpu-AB"]:
        code, _, err = run_inline([*SIM, "snapshot", "-i", ids])
        assert code == 2 and len(err.splitlines()) == 1 and "-i/--id" in err, (ids, err)
    # the same device by two names: decided against the node's devices
    code, _, err = run_inline([*SIM, "snapshot", "-i", "0,00"])
    assert code == 2 and err.count("\n") == 1 and "twice" in err, err


