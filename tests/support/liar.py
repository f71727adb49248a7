"""A remote that lies: the cluster tests run it over ssh in place of the agent.

Modes: garbage (a hello, then lines that are not JSON), huge (a hello, one 100 MB line, then valid
snapshots), hang (one sample, then silence), schema (a hello for a schema this viewer does not speak), noise (shell noise before a
valid agent stream), badtypes (snapshots whose values have the wrong types), and numbers no
device reports: overflow ("power_draw_w": 1e400, which Python reads as infinity), bignum (a
400-digit integer), nullsat ("saturation": null where an object belongs).
"""

from __future__ import annotations

import json
import select
import sys
import time

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.core.model import snapshot_to_json


def line(doc: dict) -> None:
    sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def hello(schema: str = "gputop/1") -> None:
    line({"hello": "gputop", "version": "0.1.0", "schema": schema, "backend": "sim",
          "host": "liar"})


def snapshots(interval: float = 0.3) -> None:
    backend = SimBackend(BackendOptions(scenario="idle"))
    backend.open()
    while True:
        line(snapshot_to_json(backend.sample()))
        time.sleep(interval)


def silent_until_eof(limit: float) -> None:
    """Say nothing more, but end with the session as every agent does (EOF on stdin)."""
    select.select([sys.stdin], [], [], limit)


def main(mode: str) -> None:
    if mode == "garbage":
        hello()
        while True:
            sys.stdout.write("this is not json {\x1b[31m\n")
            sys.stdout.flush()
            time.sleep(0.2)
    elif mode == "huge":
        hello()
        chunk = "x" * (1 << 20)
        for _ in range(100):
            sys.stdout.write(chunk)
        sys.stdout.write("\n")
        sys.stdout.flush()
        snapshots()
    elif mode == "schema":
        hello("gputop/99")
        silent_until_eof(30)
    elif mode == "noise":
        print("Welcome to node-x! Last login: never", flush=True)
        hello()
        snapshots()
    elif mode == "hang":  # a hello and one sample, then silence on a live connection
        hello()
        backend = SimBackend(BackendOptions(scenario="idle"))
        backend.open()
        line(snapshot_to_json(backend.sample()))
        silent_until_eof(60)
    elif mode == "badtypes":
        hello()
        backend = SimBackend(BackendOptions(scenario="idle"))
        backend.open()
        while True:
            doc = snapshot_to_json(backend.sample())
            doc["devices"][0]["utilization_gpu_pct"] = "[31mred"
            line(doc)
            time.sleep(0.3)
    elif mode in LIES:
        hello()
        backend = SimBackend(BackendOptions(scenario="idle"))
        backend.open()
        key, text = LIES[mode]
        while True:
            doc = snapshot_to_json(backend.sample())
            doc["devices"][1][key] = "@LIE@"
            sys.stdout.write(json.dumps(doc, separators=(",", ":")).replace('"@LIE@"', text)
                             + "\n")
            sys.stdout.flush()
            time.sleep(0.3)
    else:
        raise SystemExit(f"unknown mode {mode}")


LIES = {"overflow": ("power_draw_w", "1e400"), "bignum": ("memory_used_mib", "9" * 400),
        "nullsat": ("saturation", "null")}


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except BrokenPipeError:
        pass
