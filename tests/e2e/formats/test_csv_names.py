"""Query mode, as a process, replays a log whose process names hold commas, terminal controls and
bytes that are not UTF-8: each cell keeps its commas (the log said so) but not its controls."""

from __future__ import annotations

import subprocess

from tests.support.paths import ROOT, gputop_cmd


def test_a_replayed_logs_cells_keep_their_commas_but_not_their_controls(tmp_path):
    log = tmp_path / "apps.csv"
    log.write_bytes(b"timestamp, pid, process_name, used_gpu_memory [MiB]\n"
                    b"2026/07/14 08:12:53.500, 11327, /root/\x1b]0;pwned\x07hog, 2566 MiB\n"
                    b"2026/07/14 08:12:53.500, 11328, /root/a, b, 1542 MiB\n"
                    b"2026/07/14 08:12:53.500, 11329, BAD\xff, 1 MiB\n")
    out = subprocess.run(gputop_cmd("--backend", "replay", "--replay", str(log),
                                    "--query-compute-apps=pid,process_name,used_memory",
                                    "--format=csv,noheader"),
                         cwd=ROOT, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8").splitlines() == [
        "11327, /root/^[]0;pwned^Ghog, 2566 MiB",
        "11328, /root/a, b, 1542 MiB",  # as nvidia-smi wrote it
        r"11329, BAD\xff, 1 MiB",
    ]
