"""npu-smi backend figures: parse cost per real table, and sample() latency while npu-smi is slow.

    python bench/npu_smi.py [--slow SECONDS]

Parse cost is set beside a floor measured in the same run (splitting the same text into lines
and cells), so the ratio says what the parser adds. sample() latency is measured while a fake
npu-smi (a script that prints a real 8x 910B4 capture) takes --slow seconds to answer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gputop.backends.base import BackendOptions  # noqa: E402
from gputop.backends.npu_smi.backend import NpuSmiBackend  # noqa: E402
from gputop.backends.npu_smi.mapping import table_devices  # noqa: E402
from gputop.backends.npu_smi.table import parse_table  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "npu-smi"
TABLE_8X = "info_910B4-x8_npu-smi-25.0.rc1.1_no-processes-per-NPU_indexid-44432403459.txt"


def per_call(fn, text: str, budget_s: float = 0.3) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget_s:
        fn(text)
        n += 1
    return (time.perf_counter() - start) / n


def floor(text: str) -> None:
    for line in text.splitlines():
        line.strip().split("|")


def bench_parse() -> None:
    print("parse_table + mapping per real capture (µs), and the ratio to a split-only floor:")
    for path in sorted(FIXTURES.glob("info_*.txt")):
        text = path.read_text(encoding="utf-8")
        parse = per_call(lambda t: table_devices(parse_table(t)), text)
        base = per_call(floor, text)
        print(f"  {path.name[:60]:60s} {parse * 1e6:8.1f} µs  x{parse / base:5.1f} of floor")


FAKE = """#!{python} -S
import sys, time
if sys.argv[1:] == ["info"]:
    time.sleep({slow})
    sys.stdout.write(open({table!r}).read())
    sys.exit(0)
sys.exit(2)
"""


def bench_sample(slow: float) -> None:
    folder = Path(tempfile.mkdtemp(prefix="gputop-bench-"))
    fake = folder / "npu-smi"
    fake.write_text(FAKE.format(python=sys.executable, slow=slow,
                                table=str(FIXTURES / TABLE_8X)))
    fake.chmod(0o755)
    t0 = time.monotonic()
    backend = NpuSmiBackend(BackendOptions(npu_smi=str(fake)), enrich_s=3600)
    backend.open()
    opened = time.monotonic() - t0
    lat, ages = [], []
    end = time.monotonic() + 2.5 * slow
    while time.monotonic() < end:
        s = time.perf_counter()
        snap = backend.sample()
        lat.append(time.perf_counter() - s)
        ages.append(snap.devices[0].data_age_s)
        time.sleep(0.01)
    backend.close()
    lat.sort()
    print(f"\nnpu-smi answering in {slow:g} s ({TABLE_8X[:20]}…, 8 NPUs):")
    print(f"  open() (waits for the first table): {opened:.2f} s")
    print(f"  sample() over {len(lat)} calls: median {statistics.median(lat) * 1e6:.0f} µs, "
          f"p99 {lat[int(0.99 * (len(lat) - 1))] * 1e6:.0f} µs, max {lat[-1] * 1e3:.2f} ms "
          f"(x{slow / lat[-1]:,.0f} faster than one npu-smi answer)")
    print(f"  data_age_s seen: {min(ages):.2f} .. {max(ages):.2f} s")
    os.unlink(fake)
    folder.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slow", type=float, default=5.0, help="seconds npu-smi takes to answer")
    args = ap.parse_args()
    bench_parse()
    bench_sample(args.slow)


if __name__ == "__main__":
    main()
