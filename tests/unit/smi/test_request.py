"""nvidia-smi's command line: what the personality answers, and what it refuses in nvidia-smi's
own words and exit codes (captured from driver 580.159.04 on an H200)."""

from __future__ import annotations

import pytest

from gputop.commands.main import main
from gputop.smi.request import DISPLAY, SmiRefusal, SmiRequest, parse
from tests.support.paths import FIXTURES

SMI = FIXTURES / "nvidia-smi"
ERRORS = SMI / "errors_580.159.04"
H200 = str(SMI / "qx_1xH200_580.159.04_schema-v13_idle.xml")  # one GPU, index 0


def _index() -> dict[str, tuple[int, list[str]]]:
    out = {}
    for line in (ERRORS / "INDEX.tsv").read_text().splitlines():
        name, rc, command = line.split("\t")
        out[name] = (int(rc.removeprefix("rc=")), command.split()[1:])
    return out


# The refusals the personality itself answers (query mode's are its own: docs/nvidia-smi.md).
REFUSED = ["bad_00.txt", "bad_01.txt", "bad_02.txt", "bad_03.txt", "bad_08.txt", "bad_09.txt",
           "bad_10.txt", "bad_12.txt"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_refusal_is_nvidia_smis_words_and_code(name: str, capsys) -> None:
    rc, argv = _index()[name]
    got = main(["--backend", "replay", "--replay", H200, "nvidia-smi", *argv])
    out, err = capsys.readouterr()
    assert (got, out, err) == (rc, (ERRORS / name).read_text(), "")


def test_the_forms_parse() -> None:
    assert parse([]) == SmiRequest("table")
    assert parse(["-L"]) == SmiRequest("list")
    assert parse(["--list-gpus", "-l", "2"]) == SmiRequest("list", interval=2.0)
    assert parse(["-q", "-x", "-i", "0,1"]) == SmiRequest("qx", ids="0,1")
    assert parse(["--query", "--display=temperature,PIDS", "-l"]) == SmiRequest(
        "q", display=("TEMPERATURE", "PIDS"), interval=5.0)
    assert parse(["-q", "-d", "POWER", "-lms", "500", "-f", "out.txt"]) == SmiRequest(
        "q", display=("POWER",), interval=0.5, filename="out.txt")
    assert parse(["-l", "5", "-q", "-d", "TEMPERATURE"]) == SmiRequest(
        "q", display=("TEMPERATURE",), interval=5.0)  # gpu-burn's stream
    assert parse(["-x", "-q", "-l", "1"]) == SmiRequest("qx", interval=1.0)  # netdata's


@pytest.mark.parametrize("argv, code", [
    (["-pl", "300"], 3),  # a setting: never changed
    (["-r"], 3),
    (["dmon"], 3),  # a subcommand not answered
    (["-q", "-x", "-d", "POWER"], 2),  # -d reads text only
    (["-l", "0"], 2),
    (["-lms", "abc"], 2),
    (["-l", "1", "-lms", "100"], 2),
    (["-i"], 2),
])
def test_what_is_not_answered_is_refused(argv: list[str], code: int) -> None:
    with pytest.raises(SmiRefusal) as refusal:
        parse(argv)
    assert refusal.value.exit_code == code
    assert refusal.value.text.endswith("\n") and "Traceback" not in refusal.value.text


def test_every_display_type_of_the_help_is_known() -> None:
    help_text = (SMI / "help_590.48.01_h100.txt").read_text()
    listed = help_text.split("-d,   --display=")[1].split("Flags can be combined")[0]
    names = {w.strip(",") for w in listed.replace(":", " ").split() if w.strip(",").isupper()}
    assert names == set(DISPLAY)


def test_the_word_is_the_personality_only_after_gputops_own_options(tmp_path, monkeypatch,
                                                                    capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nvidia-smi").write_text("index, name\n0, NVIDIA H200\n")  # a log of that name
    assert main(["--backend", "replay", "--replay", "nvidia-smi", "--query-gpu=name",
                 "--format=csv,noheader"]) == 0
    assert main(["--query-gpu=index", "--format=csv,noheader", "--backend", "replay",
                 "--replay", "nvidia-smi", "-f", "nvidia-smi.csv"]) == 0
    assert (tmp_path / "nvidia-smi.csv").read_text() == "0\n"
    assert main(["--backend", "replay", "--replay", H200, "nvidia-smi", "-L"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NVIDIA H200\nGPU 0: NVIDIA H200 (UUID: GPU-")


def test_run_as_nvidia_smi_every_argument_is_nvidia_smis(capsys) -> None:
    assert main(["-h"], program="/usr/local/bin/nvidia-smi") == 0
    out = capsys.readouterr().out
    assert out.startswith("gputop's nvidia-smi:") and "-q -x" in out
    assert main(["--bogus"], program="nvidia-smi") == 255


def test_query_details_scripts_rely_on(capsys) -> None:
    eight = str(SMI / "q_8xA100-SXM4-40GB_535.129.03.txt")
    assert main(["--backend", "replay", "--replay", eight, "nvidia-smi", "--query-gpu=count",
                 "--format=noheader,csv"]) == 0  # the options in either order
    assert capsys.readouterr().out == "8\n" * 8  # the count once per GPU, each line ended
    assert main(["--backend", "replay", "--replay", eight, "nvidia-smi",
                 "--query-gpu=index,fan.speed", "--format=csv,noheader",
                 "-i", "00000000:35:00.0"]) == 0
    assert capsys.readouterr().out == "1, [N/A]\n"  # by bus id; [N/A] as nvidia-smi prints it
