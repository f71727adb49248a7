"""The advisor on MIG GPUs: it says that a power limit is the physical GPU's, sweeps the parent,
and its estimate follows the slowdown of the instances' jobs (the simulator's ground truth)."""

from __future__ import annotations

from gputop.advisor import passive, render
from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from tests.support.advise import TOLERANCE_PP, sweep


def _summaries(scenario: str) -> list[passive.PassiveGpu]:
    backend = SimBackend(BackendOptions(scenario=scenario))
    backend.open()
    return passive.summarize([backend.sample(), backend.sample()])


def test_one_line_names_the_split_gpus_and_says_the_limit_is_the_gpus():
    lines = render.passive_lines(_summaries("mig"))
    mig = [line for line in lines if line.startswith("MIG:")]
    assert mig == ["MIG: GPU 0 (7x 1g.10gb); GPU 1 (7x 1g.10gb); GPU 2 (3g.40gb, 2x 2g.20gb);"
                   " GPU 3 (2x 2g.20gb, 1g.10gb+me, 2x 1g.10gb). Power limits are per physical"
                   " GPU: the advisor sets the whole GPU's limit and measures the slowdown of"
                   " all its instances' jobs together."]
    assert not any(line.startswith("MIG:") for line in render.passive_lines(_summaries("training")))


def test_a_sweep_of_mig_gpus_measures_their_instances_jobs(adv):
    result, backend = sweep(adv, "mig", devices=[2, 3], settle_s=5, measure_s=15)
    assert result.proxy is not None and result.stopped == "max-slowdown"
    # the ground truth is the instances' jobs' throughput: a lower limit on the parent slows them
    assert result.rows[-1].true_slowdown_pct > 3.0
    for row in result.rows:
        assert abs(row.slowdown_pct - row.true_slowdown_pct) <= TOLERANCE_PP, row
    assert result.recommendation is not None and result.recommendation.row.slowdown_pct <= 5.0


async def test_the_advisor_screen_shows_the_line(adv):
    from gputop.sampler import Sampler
    from gputop.tui.screens.advisor import AdvisorScreen
    from tests.support.advise import Host, open_sim, text_of
    from tests.support.tui import wait_until

    backend = open_sim(adv, scenario="mig")
    sampler = Sampler(backend, 1.0)
    sampler.start()
    try:
        app = Host(backend, sampler, devices=[1, 5])
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, AdvisorScreen)
            await wait_until(pilot, lambda: "p95" in text_of(screen, "#adv-passive"))
            lines = text_of(screen, "#adv-passive").splitlines()
            mig = [line for line in lines if line.startswith("MIG:")]
            assert len(mig) == 1
            assert mig[0].startswith("MIG: GPU 1 (7x 1g.10gb). Power limits are per physical GPU")
    finally:
        sampler.stop()
