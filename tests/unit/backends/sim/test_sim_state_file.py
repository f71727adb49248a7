"""The simulator's state file: a limit it cannot keep is not set (in process, no command runs)."""

from __future__ import annotations

import pytest


def test_a_limit_the_state_file_cannot_keep_is_not_set(tmp_path):
    from gputop.backends import open_backend
    from gputop.backends.base import BackendError, BackendOptions

    state = tmp_path / "gone" / "state.json"  # its folder does not exist
    backend = open_backend("sim", BackendOptions(sim_state=str(state)))
    try:
        with pytest.raises(BackendError) as caught:
            backend.set_power_limit(0, 500)
        assert str(caught.value) == (f"simulator state file {state}: cannot write in its folder:"
                                     " No such file or directory")
        assert backend.sample([0]).devices[0].power_limit_w == 700  # as before the attempt
    finally:
        backend.close()
