"""`gputop cluster --prometheus URL --once` against a Prometheus that serves hostile labels: a
scrape target is named by whoever runs it (``Hostname``, ``instance``), its processes' ``user``
and ``name`` and its GPUs' ``modelName`` likewise, and a server's error text is its own. The
table and the one-line problem show them made visible; ``--json`` keeps them as they are, in
JSON a strict parser accepts (a label spelling a lone surrogate comes out as U+FFFD).

The fake Prometheus is a few lines of http.server on 127.0.0.1, answering the instant queries
the view sends; it runs in this test's process and is shut down in a ``finally``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support import hostile
from tests.support.paths import ROOT

E = hostile.ESC
HOST = f"gpu{E}]0;pwned{hostile.BEL}{E}]52;c;ZXZpbA=={hostile.BEL}\u202e7"
INSTANCE = f"10.0.0.7:9400{E}[2J"
MODEL = f"H100{E}]8;;http://evil.example/{E}\\"
USER = f"mallory\u009b31m{E}[6n"
NAME = f"train{E}[2J\udcff"  # \udcff: what a JSON answer may spell, never valid Unicode
ERROR = f"bad query{E}]0;pwned{hostile.BEL}\n{E}[2J"


class FakePrometheus(BaseHTTPRequestHandler):
    """Every query answered with one GPU of one hostile target (or, when ``refuse``, an error
    whose text is hostile)."""

    refuse = False

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("query", [""])[0]
        if self.server.refuse:  # type: ignore[attr-defined]
            body = {"status": "error", "errorType": "bad_data", "error": ERROR}
        else:
            now = time.time()
            value = now if query.startswith("timestamp(") or "snapshot_timestamp" in query else 1
            labels = {"instance": INSTANCE, "Hostname": HOST, "gpu": "0", "modelName": MODEL,
                      "UUID": "GPU-1", "pid": "4242", "user": USER, "name": NAME,
                      "status": "ok", "backend": "nvml"}
            body = {"status": "success", "data": {"resultType": "vector", "result": [
                {"metric": labels, "value": [now, str(value)]}]}}
        data = json.dumps(body).encode()  # ensure_ascii: "\udcff" spelt as JSON allows
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def prometheus():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    server.refuse = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def cluster_once(server, *args: str) -> subprocess.CompletedProcess:
    url = f"http://127.0.0.1:{server.server_address[1]}"
    return subprocess.run([sys.executable, "-m", "gputop", "cluster", "--prometheus", url,
                           "--once", "--timeout", "10", *args], cwd=ROOT, capture_output=True,
                          timeout=60)


def test_the_once_table_shows_a_hostile_target_made_visible(prometheus):
    out = cluster_once(prometheus)
    text = out.stdout.decode("utf-8")  # strict: valid UTF-8
    assert out.returncode == 0, out.stderr
    assert hostile.inert(text), repr(text)
    assert "gpu^[]0;pwned^G^[]52;c;ZXZpbA==^G\\u202e7  ok" in text


def test_once_json_keeps_the_labels_in_json_a_strict_parser_reads(prometheus):
    out = cluster_once(prometheus, "--json")
    assert out.returncode == 0, out.stderr
    assert b"\\udcff" not in out.stdout  # a lone surrogate, which Go, Rust and jq refuse
    doc = json.loads(out.stdout.decode("utf-8"))
    node = doc["nodes"][0]
    assert node["host"] == HOST  # JSON escapes controls itself: kept as the target said
    dev = node["snapshot"]["devices"][0]
    assert dev["name"] == MODEL
    assert dev["processes"][0]["user"] == USER
    assert dev["processes"][0]["name"] == f"train{E}[2J\ufffd"


def test_a_servers_error_is_one_visible_line(prometheus):
    prometheus.refuse = True
    out = cluster_once(prometheus, "--timeout", "2")
    err = out.stderr.decode("utf-8")
    assert out.returncode == 1
    assert len(err.strip().splitlines()) == 1 and hostile.inert(err), repr(err)
    assert "bad query^[]0;pwned^G" in err
