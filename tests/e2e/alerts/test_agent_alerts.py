"""`gputop agent --alerts FILE`: the alerts each snapshot fired or resolved ride on its line,
once each, and a second session on the same journal re-fires none of them."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

from gputop.cluster.protocol import AgentDecoder, Checked, Hello
from tests.support.paths import gputop_cmd
from tests.support.watch_lab import EXPECTED, SCENARIO, by_rule, settings


def stream(config) -> list[bytes]:
    proc = subprocess.run(
        gputop_cmd("agent", "--alerts", str(config), *SCENARIO, "--sim-speed", "200",
                   "--ignore-stdin", "--count", "90"),  # 180 s of the scenario
        capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    return [line for line in proc.stdout.splitlines() if line.strip()]


def alerts(lines: list[bytes]) -> Counter[tuple[str, int | None, str]]:
    return by_rule([a for line in lines[1:] for a in json.loads(line)["alerts"]])


def test_the_agent_carries_each_alert_once_and_the_viewer_decodes_its_lines(tmp_path):
    config = settings(tmp_path / "agent.toml", tmp_path / "journal.jsonl")
    lines = stream(config)
    assert alerts(lines) == EXPECTED
    decoder = AgentDecoder()
    decoded = [decoder.feed(line) for line in lines]
    assert isinstance(decoded[0], Hello)
    assert all(isinstance(d, Checked) for d in decoded[1:])

    again = alerts(stream(config))  # a new ssh session: the journal says what fired
    assert not [key for key in again if key[2] == "firing"], again
