"""What every script-facing command is, and what it may print, where no device answers."""

import json

# The commands a script runs; none may fall back to the simulator.
SCRIPT_COMMANDS = {
    "query-gpu": ["--query-gpu=index,name,utilization.gpu", "--format=csv,noheader"],
    "query-gpu-loop": ["--query-gpu=index", "--format=csv", "-l", "1"],
    "query-compute-apps": ["--query-compute-apps=pid,used_memory", "--format=csv"],
    "snapshot": ["snapshot"],
    "snapshot-json": ["snapshot", "--json"],
    "agent": ["agent", "--ignore-stdin"],
    "watch": ["watch"],
    "advise": ["advise", "--window", "1"],
    "advise-sweep": ["advise", "--sweep", "--dry-run"],
    # plain `gputop` with no terminal (a script's subprocess, a pipe): the text view once
    "no-terminal": [],
    # the nvidia-smi personality: the table, -L, an XML loop
    "nvidia-smi": ["nvidia-smi"],
    "nvidia-smi-list": ["nvidia-smi", "-L"],
    "nvidia-smi-xml-loop": ["nvidia-smi", "-q", "-x", "-l", "1"],
}


def assert_no_readings(argv: list[str], stdout: str) -> None:
    """Nothing but the agent's hello (sent before the backend opens, so a slow first read never
    looks like a dead node) reaches stdout: no device, simulated or not."""
    lines = stdout.splitlines()
    if argv[:1] == ["agent"]:
        assert len(lines) == 1 and json.loads(lines[0])["hello"] == "gputop"
        assert "devices" not in lines[0]
    else:
        assert stdout == ""
