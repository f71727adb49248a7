"""Query-mode command line: nvidia-smi's flags, its error messages and exit codes."""

from __future__ import annotations

import pytest

from gputop.commands.main import main


def test_invalid_compute_apps_field(capsys):
    assert main(["--backend", "sim", "--query-compute-apps=pid,index", "--format=csv"]) == 2
    assert capsys.readouterr().out == 'Field "index" is not a valid field to query.\n\n'


@pytest.mark.parametrize("args, message", [
    (["--query-gpu=index"], "--query-gpu needs --format=csv[,noheader][,nounits]"),
    (["--query-gpu=index", "--format=xml"], "invalid --format option 'xml'"),
    (["--query-gpu=index", "--format=noheader"], "--format must include csv"),
    (["--query-gpu=index", "--format=csv", "-l", "0"],
     "argument -l/--loop: expected a number from 0.001 to 86400 s, not '0'"),
    (["--query-gpu=index", "--format=csv", "-l", "soon"], "argument -l/--loop: expected a number"),
    (["--query-gpu=index", "--format=csv", "-lms", "-5"],
     "argument -lms/--loop-ms: expected a whole number from 1 to 86400000 ms, not '-5'"),
    (["--query-gpu=index", "--format=csv", "-lms", "1.5"], "argument -lms/--loop-ms: expected a whole"),
    (["--query-gpu=index", "--format=csv", "-l", "1", "-lms", "10"], "not allowed with"),
    (["--query-gpu=index", "--format=csv", "-i", "12"], "no device matches id '12'"),
    (["--query-gpu=index", "--format=csv", "-i", "GPU-nope"], "no device matches id 'GPU-nope'"),
    (["--query-gpu=index", "--query-compute-apps=pid", "--format=csv"], "not allowed with"),
])
def test_bad_input_is_one_line_and_nonzero(capsys, args, message):
    code = main(["--backend", "sim", *args])
    err = capsys.readouterr()
    assert code == 2
    assert err.out == ""
    assert err.err.count("\n") == 1 and err.err.startswith("gputop: ") and message in err.err


def test_flag_spellings(capsys):
    for argv in (["--query-gpu=index,name", "--format=csv,noheader", "--id=1"],
                 ["--query-gpu", "index,name", "--format", "csv,noheader", "-i", "1"],
                 ["--query-gpu=index,name", "--format=csv,noheader,nounits", "--id", "00000000:28:00.0"]):
        assert main(["--backend", "sim", *argv]) == 0
        assert capsys.readouterr().out == "1, NVIDIA H100 80GB HBM3\n"


