"""Replay: real nvidia-smi logs back through query mode, byte for byte; the player; bad logs."""

from __future__ import annotations

import hypothesis
import hypothesis.strategies as st
import pytest

from gputop.backends import open_backend
from gputop.backends.base import BackendOptions
from gputop.backends.controls import ReplayControls
from gputop.backends.replay.backend import Player, ReplayBackend, ReplayClock
from gputop.commands.main import main
from gputop.core.errors import GputopError
from gputop.sampler import Sampler
from tests.support.query import CSV_CAPTURES, FIX, replay_argv

V100 = FIX / "csv_8xV100-SXM2-32GB_driver-unstated_indexid-58442594871.csv"
LMS = FIX / "csv_lms_1xA10-24GB_xuesongtap_driver-unstated.csv"


@pytest.mark.parametrize("capture", CSV_CAPTURES, ids=lambda p: p.name)
def test_real_capture_replays_to_identical_bytes(capture, capsysbinary):
    assert main(replay_argv(capture)) == 0
    assert capsysbinary.readouterr().out == capture.read_bytes()


def test_gputop_log_round_trips_including_nounits(tmp_path, capsys):
    log = tmp_path / "log.csv"
    fields = "timestamp,index,name,power.draw,memory.used,clocks.sm,clocks_event_reasons.active"
    assert main(["--backend", "sim", f"--query-gpu={fields}", "--format=csv,nounits",
                 "-f", str(log)]) == 0
    text = log.read_text()
    assert len(text.splitlines()) == 9  # header + 8 GPUs
    assert main(["--backend", "replay", "--replay", str(log), f"--query-gpu={fields}",
                 "--format=csv,nounits"]) == 0
    assert capsys.readouterr().out == text
    # the same log with units asked for: units come back, values unchanged
    assert main(["--backend", "replay", "--replay", str(log), "--query-gpu=power.draw,index",
                 "--format=csv,noheader"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith(" W, 0") and first.split(" W")[0] == text.splitlines()[1].split(", ")[3]


def test_replayed_values_reach_the_model():
    backend = open_backend("replay", BackendOptions(replay=str(V100)))
    try:
        assert len(backend) == 1
        snap = backend.sample()
        assert [d.index for d in snap.devices] == list(range(8))
        assert snap.devices[5].memory_total_mib == 32764
        assert snap.devices[6].utilization_gpu_pct == 100
        assert snap.devices[6].memory_used_mib == 13928
        assert snap.devices[0].temperature_c == 35
        assert [d.index for d in backend.info().devices] == list(range(8))
    finally:
        backend.close()


def test_device_selection_on_replay(capsys):
    assert main(replay_argv(V100, "-i", "6", "--format=csv,noheader")) == 0
    assert capsys.readouterr().out == V100.read_text().splitlines()[7] + "\n"
    assert main(replay_argv(V100, "-i", "9")) == 2
    err = capsys.readouterr()
    assert err.out == "" and err.err == "gputop: no device matches id '9'\n"


def test_resampling_with_a_loop_interval(capsys):
    # rows ~4 ms apart for 0.118 s: one row per 50 ms of log time -> t = 0, 50, 100 ms
    assert main(replay_argv(LMS, "-lms", "50", "--format=csv,noheader")) == 0
    rows = capsys.readouterr().out.splitlines()
    lines = LMS.read_text().splitlines()
    assert rows == [lines[1], lines[4], lines[4]]


def test_player_controls():
    now = [100.0]
    player = Player([0.0, 1.0, 2.0, 5.0], speed=1.0, now=lambda: now[0])
    assert player.playing and player.index == 0
    now[0] += 1.5
    assert player.index == 1 and player.position == pytest.approx(1.5)
    player.set_speed(2.0)
    now[0] += 1.0  # 2 s of log in 1 s
    assert player.position == pytest.approx(3.5) and player.index == 2
    player.pause()
    now[0] += 10
    assert player.position == pytest.approx(3.5) and not player.playing
    player.step(1)
    assert player.index == 3 and player.at_end
    player.step(-2)
    assert player.index == 1 and player.position == 1.0
    player.seek(100)
    assert player.position == 5.0
    player.seek(-3)
    assert player.position == 0.0
    played = player.played
    player.play()
    now[0] += 20
    assert player.at_end and not player.playing  # stops at the end
    assert player.played == pytest.approx(played + 5.0)  # seeks never move the clock
    player.play()  # play at the end starts over
    assert player.position == 0.0 and player.playing
    with pytest.raises(ValueError):
        player.set_speed(0)


def test_the_player_implements_the_replay_controls_a_view_drives() -> None:
    members = {name for name in vars(ReplayControls) if not name.startswith("_")}
    assert members == {"position", "duration", "speed", "playing", "times", "play", "pause",
                       "toggle", "step", "set_speed", "seek", "skip"}
    player = Player([0.0, 1.0, 2.0])
    controls: ReplayControls = player  # mypy checks the Player against the contract
    assert sorted(n for n in members if not hasattr(controls, n)) == []
    controls.skip(1.5)
    assert player.position == pytest.approx(1.5, abs=0.1) and list(controls.times) == [0, 1, 2]


def test_sampler_follows_the_log_clock(tmp_path):
    log = tmp_path / "slow.csv"
    lines = ["timestamp, index, utilization.gpu [%]"]
    for i in range(6):
        lines.append(f"2026/07/14 08:00:{i * 10:02d}.000, 0, {i} %")
    log.write_text("\n".join(lines) + "\n")
    backend = ReplayBackend(BackendOptions(replay=str(log), sim_speed=50.0))
    backend.open()
    assert isinstance(backend.clock, ReplayClock)
    assert backend.player.duration == 50.0
    sampler = Sampler(backend, interval=10.0)
    snaps: list = []
    sampler.subscribe(snaps.append)
    sampler.run_for(45.0)  # 45 s of log at 50x: about 0.9 s
    seen = [s.devices[0].utilization_gpu_pct for s in snaps]
    # one sample per 10 s of log time (a loaded machine may skip a late tick, never repeat one)
    assert seen[0] == 0 and seen[-1] == 4 and seen == sorted(set(seen)) and len(seen) >= 3
    assert [s.time - snaps[0].time for s in snaps] == [10.0 * v for v in seen]  # the log's clock


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    ("0, 1, 2\n", ":1: not an nvidia-smi CSV header"),
    ("index, name\n0, a\n1\n2, c\n", ":3: expected 2 cells as in the header, found 1"),
    ("timestamp, index\n2026/07/14 08:00:00.000, 0\nnot a time, 0\n", ":3: bad timestamp"),
    ("index, name\nzero, a\n", ":2: bad GPU index"),
])
def test_malformed_log_names_the_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(GputopError, match=message):
        open_backend("replay", BackendOptions(replay=str(path)))


def test_truncated_last_row_is_dropped_not_an_error(tmp_path, capsys):
    path = tmp_path / "cut.csv"
    path.write_text("index, name, power.draw [W]\n0, a, 1.00 W\n1, b")
    assert main(["--backend", "replay", "--replay", str(path), "--query-gpu=index",
                 "--format=csv,noheader"]) == 0
    assert capsys.readouterr().out == "0\n"


def test_name_with_comma_survives(tmp_path, capsys):
    path = tmp_path / "apps.csv"
    text = "pid, process_name, used_gpu_memory [MiB]\n7, python a, b.py, 10 MiB\n"
    path.write_text(text)
    assert main(["--backend", "replay", "--replay", str(path),
                 "--query-compute-apps=pid,process_name,used_gpu_memory", "--format=csv"]) == 0
    assert capsys.readouterr().out == text


def test_missing_replay_file(tmp_path):
    with pytest.raises(GputopError, match="cannot read log"):
        open_backend("replay", BackendOptions(replay=str(tmp_path / "nope.csv")))
    with pytest.raises(GputopError, match="--replay FILE"):
        open_backend("replay", BackendOptions())


def test_replay_command_reports_a_bad_log_before_any_dashboard(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("index, name\n0, a\n1\n")
    assert main(["replay", str(path)]) == 1
    assert capsys.readouterr().err == f"gputop: {path}:3: expected 2 cells as in the header, found 1\n"
    assert main(["replay", str(tmp_path / "none.csv")]) == 1
    assert "cannot read log" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad_speed:  # argparse's exit, before the log is read
        main(["replay", str(path), "--speed", "0"])
    assert bad_speed.value.code == 2
    assert "argument --speed: expected a number from 0.125 to 64" in capsys.readouterr().err


def test_replay_command_hands_the_dashboard_a_replay_backend(monkeypatch):
    from gputop.commands import dashboard

    seen = {}
    monkeypatch.setattr(dashboard, "run_dashboard",
                        lambda config: seen.update(source=config.source) or 0)
    monkeypatch.setattr(dashboard, "has_terminal", lambda: True)  # as on a terminal
    assert main(["replay", str(V100), "--speed", "4"]) == 0
    source = seen["source"]
    assert source.backend == "replay" and source.options.replay == str(V100)
    assert source.options.sim_speed == 4.0
    backend = open_backend("replay", BackendOptions(replay=str(V100), sim_speed=4.0))
    assert backend.player.speed == 4.0 and backend.player.duration == 0.0


_CELLS = ["0", "1", "P0", "85.12 W", "[N/A]", "", "Enabled", "0x1F", "2026/07/14 08:12:38.696",
          "0001/01/01 00:00:00.000", "9999/12/31 23:59:59.999", "x, y", "-3", "1e999", "nan", "ü"]
_HEADERS = ["timestamp", "index", "name", "power.draw [W]", "pid", "process_name", "uuid",
            "clocks_event_reasons.active", "gpu_uuid", "used_gpu_memory [MiB]", "bogus [X]"]


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(
    header=st.lists(st.sampled_from(_HEADERS), min_size=1, max_size=5),
    rows=st.lists(st.lists(st.sampled_from(_CELLS), min_size=0, max_size=6), max_size=6),
)
def test_any_log_parses_or_fails_cleanly(header, rows):
    from gputop.backends.replay.backend import build_samples
    from gputop.formats.query_log import LogFormatError, parse_log

    text = ", ".join(header) + "\n" + "".join(", ".join(r) + "\n" for r in rows)
    try:
        build_samples(parse_log(text, "f.csv"), "f.csv")
    except LogFormatError as exc:
        assert str(exc).startswith("f.csv")


def test_replayed_snapshot_text_has_no_empty_trailing_column(capsys):
    capture = FIX / "csv_all-fields_1xH100-80GB-HBM3_590.48.01_load.csv"
    assert main(["--backend", "replay", "--replay", str(capture), "snapshot"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows and rows[0].startswith("[0] NVIDIA H100 80GB HBM3")
    for row in rows:
        assert not row.rstrip().endswith("|"), row
        assert row.rstrip().endswith(" W"), row  # the power column is the last one
