"""Any number a replayed cell holds (huge, negative, non-finite, a 4000-digit mask) becomes a
value the model can hold or N/A, and the snapshot's JSON stays strict."""

from __future__ import annotations

import hypothesis
import hypothesis.strategies as st

from gputop.backends.base import BackendOptions
from gputop.backends.replay.backend import ReplayBackend
from gputop.core import jsonout
from gputop.core.errors import GputopError
from gputop.core.model import snapshot_to_json
from gputop.core.untrusted import number_ok
from tests.support import strict_json
from tests.support.query import HOSTILE_LOG_HEADER

numbers = st.one_of(
    st.integers(min_value=-10**600, max_value=10**600).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e400", "-1e400", "inf", "nan", "NaN", "-0", "1e-320", "0x" + "f" * 3000]),
    st.integers(min_value=0, max_value=2**80).map(hex),
    st.text(alphabet="0123456789abcdefx.e+- ", max_size=60),
)


@hypothesis.settings(max_examples=120, deadline=None)
@hypothesis.given(cells=st.lists(numbers, min_size=6, max_size=6))
def test_any_cells_give_model_numbers_and_strict_json(tmp_path_factory, cells):
    log = tmp_path_factory.mktemp("replay") / "log.csv"
    log.write_text(HOSTILE_LOG_HEADER + "\n2026/07/14 08:12:38.696, " + ", ".join(c.replace(",", "")
                                                                      for c in cells) + "\n")
    backend = ReplayBackend(BackendOptions(replay=str(log)))
    try:
        backend.open()
    except GputopError as exc:  # a typed, one-line error is fine (a bad index)
        assert "\n" not in str(exc)
        return
    doc = snapshot_to_json(backend.sample())
    strict_json.loads(jsonout.dumps(doc))
    for dev in doc["devices"]:
        for key, value in dev.items():
            if type(value) in (int, float):
                assert number_ok(value), (key, value)
