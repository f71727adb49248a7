"""A webhook receiver on 127.0.0.1 (http.server on a thread of the test) that answers as a
test tells it: at once, late, with HTTP 500, or never. Used by the dispatcher's tests and by
`gputop watch`'s."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.notify import SECRET_PATH


class Receiver:
    """A webhook receiver: ``mode`` says how it answers the next request (``ok``, ``slow``:
    after ``delay``, ``fail``: HTTP 500 ``fails`` times, ``silent``: never); ``bodies`` holds
    what reached it, ``got`` is set on each."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.delay = 0.0
        self.fails = 0
        self.requests: list[tuple[str, dict[str, str], dict]] = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with receiver.lock:
                    mode = receiver.mode
                    receiver.requests.append((self.path, dict(self.headers), body))
                    if mode == "fail":
                        receiver.fails -= 1
                        if receiver.fails <= 0:
                            receiver.mode = "ok"
                if mode == "silent":
                    receiver.stopped.wait(10)
                    return
                if mode == "slow":
                    receiver.stopped.wait(receiver.delay)
                status, answer = (500, b"boom") if mode == "fail" else (204, b"")
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{SECRET_PATH}?sig=SECRETSIG"

    def keys(self) -> list[str]:
        with self.lock:
            return [body["alert"]["key"] for _, _, body in self.requests if "alert" in body]

    def close(self) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(2)
