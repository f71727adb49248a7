"""Alerts and notifiers for the tests of `gputop.alerts.notify`: an alert with every field set,
and fake notifiers that record, fail, or block until told, with no device, network or process."""

from __future__ import annotations

import threading
from dataclasses import replace

from gputop.alerts.model import Alert, DeliveryError

SECRET_PATH = "/services/T0SECRET/B0SECRET/XXXXtokenXXXX"


def make_alert(n: int = 0, **changes: object) -> Alert:
    """Return a firing critical alert for GPU 0 of node-a; ``n`` tells alerts apart (its key)."""
    alert = Alert(rule="hot", key=f"hot/node-a/gpu0/{n}", state="firing", severity="critical",
                  at=1767268800.0 + n, summary="GPU 0 at 91 °C for 2m (limit 85)",
                  node="node-a", gpu=0, since=1767268680.0,
                  labels=(("value", "91"), ("user", "alice")))
    return replace(alert, **changes)  # type: ignore[arg-type]


class Recorder:
    """Records what it was sent; fails the first ``fail`` attempts; blocks while ``gate`` is
    clear (a dead receiver), each attempt waiting on it for at most its timeout."""

    def __init__(self, name: str = "rec", fail: int = 0, gate: threading.Event | None = None,
                 error: Exception | None = None) -> None:
        self._name = name
        self.fail = fail
        self.gate = gate
        self.error = error
        self.sent: list[Alert] = []
        self.attempts = 0
        self.timeouts: list[float] = []
        self.started = threading.Event()
        self.lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def send(self, alert: Alert, timeout_s: float) -> None:
        with self.lock:
            self.attempts += 1
            self.timeouts.append(timeout_s)
        self.started.set()
        if self.gate is not None and not self.gate.wait(timeout_s):
            raise DeliveryError(f"no answer within {timeout_s:g} s")
        if self.error is not None:
            raise self.error
        with self.lock:
            if self.fail > 0:
                self.fail -= 1
                raise DeliveryError("HTTP 500: boom")
            self.sent.append(alert)
