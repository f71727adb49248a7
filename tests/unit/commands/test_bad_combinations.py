"""Settings that cannot all be honoured are refused at start in one line (exit 2), before any
device is opened; an empty query field is refused as nvidia-smi refuses it (#24)."""

from __future__ import annotations

import contextlib
import io

import pytest

from gputop.commands.main import main

SIM = ["--backend", "sim"]


def run_inline(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fields", ["index,,power.draw", "index,", ",index", "index, ,name"])
def test_an_empty_query_field_is_refused_as_nvidia_smi_does(fields):
    code, out, err = run_inline([*SIM, f"--query-gpu={fields}", "--format=csv"])
    # nvidia-smi's answer to a field it does not know: the message and a blank line on stdout
    assert (code, out, err) == (2, 'Field "" is not a valid field to query.\n\n', "")


def test_a_repeated_query_field_is_still_printed_twice_as_nvidia_smi_does():
    code, out, _ = run_inline([*SIM, "--query-gpu=index,index", "--format=csv,noheader",
                               "-i", "0"])
    assert (code, out) == (0, "0, 0\n")


SNAPSHOT_REFUSED = [
    (["--window", "0.5"], "snapshot --window 0.5 s is shorter than --interval 1 s: it would take"
                          " one sample, as --window 0 does"),
    (["--window", "2", "--interval", "5"], "shorter than --interval 5 s"),
    (["--window", "0", "--interval", "2"], "--interval 2 does nothing where snapshot takes one"
                                           " sample (--window 0, the default)"),
    (["--interval", "2"], "--interval 2 does nothing where snapshot takes one sample"),
]


@pytest.mark.parametrize("args,message", SNAPSHOT_REFUSED,
                         ids=[" ".join(a) for a, _ in SNAPSHOT_REFUSED])
def test_a_snapshot_window_that_cannot_do_what_it_says_is_refused(args, message):
    code, out, err = run_inline([*SIM, "snapshot", *args])
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("gputop: ") and message in err, err


@pytest.mark.parametrize("args", [["--window", "0"], ["--window", "0", "--interval", "1"],
                                  ["--window", "2", "--interval", "2", "--sim-speed", "100"]])
def test_a_snapshot_window_that_is_honoured_still_runs(args):
    code, out, err = run_inline([*SIM, "snapshot", *args])
    assert code == 0 and err == "" and "SIMULATED" in out


ADVISE_REFUSED = [
    (["--sweep", "--run", "true"], "--sweep and --run are two ways to measure the curve"),
    (["--dry-run"], "--dry-run does nothing without --sweep or --run (the passive view changes"
                    " no limit): it is for --sweep and --run"),
    (["--step", "50"], "--step does nothing without --sweep or --run"),
    (["--settle", "0"], "--settle does nothing without --sweep or --run"),
    (["--max-slowdown", "3"], "--max-slowdown does nothing without --sweep or --run"),
    (["--eta", "0.2"], "--eta does nothing without --sweep or --run"),
    (["--lowest", "300"], "--lowest does nothing without --sweep or --run"),
    (["--sweep", "--repeat", "3"], "--repeat does nothing with --sweep: it is for --run"),
    (["--run", "true", "--measure", "5"], "--measure does nothing with --run: it is for --sweep"),
    (["--repeat", "2"], "--repeat does nothing without --sweep or --run"),
    (["--restore", "--window", "5"], "--window does nothing with --restore"),
    (["--restore", "-i", "0"], "-i/--id does nothing with --restore (it puts back every limit"
                               " its journals hold): it is for the passive view, --sweep and"
                               " --run"),
    (["--restore", "--step", "50"], "--step does nothing with --restore"),
]


@pytest.mark.parametrize("args,message", ADVISE_REFUSED,
                         ids=[" ".join(a) for a, _ in ADVISE_REFUSED])
def test_advise_settings_that_contradict_are_refused_at_start(tmp_path, monkeypatch, args,
                                                              message):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    state = tmp_path / "sim-state.json"
    code, out, err = run_inline([*SIM, "--sim-state", str(state), "advise", *args])
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and message in err, err
    assert not state.exists() and not (tmp_path / "state").exists()  # nothing was touched


@pytest.mark.parametrize("args", [
    ["--sweep", "--dry-run", "--window", "5", "--measure", "5", "--step", "50"],
    ["--run", "true", "--dry-run", "--repeat", "2", "--settle", "1"],
    ["--window", "0.2", "--sim-speed", "100", "--no-plot", "--json"],
], ids=["sweep-plan", "benchmark-plan", "passive"])
def test_advise_settings_that_each_act_are_accepted(tmp_path, monkeypatch, args):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    code, out, err = run_inline([*SIM, "advise", *args])
    assert code == 0 and out, err
