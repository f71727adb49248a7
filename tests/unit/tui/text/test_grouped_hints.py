"""`gputop snapshot` says a hint that several GPUs share once (#27: eight identical lines)."""

from __future__ import annotations

from gputop.core.model import Hint
from gputop.tui.text.compact import grouped_hints


def _capped(i: int) -> Hint:
    return Hint(device=i, code="power-capped", severity="warning",
                message=f"GPU {i} is held at power limit 400 W in 100% of the last 30 s")


def test_the_same_hint_on_several_gpus_is_one_line() -> None:
    hints = [_capped(i) for i in range(8)] + [
        Hint(device=5, code="straggler", severity="warning", message="GPU 5 is the slow one"),
        Hint(device=None, code="device-unhealthy", severity="critical", message="node says")]
    assert grouped_hints(hints) == [
        ("node", "device-unhealthy", "critical", "node says"),
        ("GPUs 0–7", "power-capped", "warning",
         "each GPU is held at power limit 400 W in 100% of the last 30 s"),
        ("GPU 5", "straggler", "warning", "GPU 5 is the slow one"),
    ]


def test_hints_that_differ_stay_apart() -> None:
    a = Hint(device=0, code="xid", severity="warning", message="GPU 0 reported Xid 79")
    b = Hint(device=1, code="xid", severity="warning", message="GPU 1 reported Xid 48")
    assert [w for w, *_ in grouped_hints([a, b])] == ["GPU 0", "GPU 1"]
