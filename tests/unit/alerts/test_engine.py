"""The alert engine on snapshots built at chosen times: a virtual clock, no device."""

from __future__ import annotations

from dataclasses import replace

from gputop.alerts.engine import AlertEngine
from gputop.alerts.journal import state_of
from gputop.alerts.model import Alert, Rule, Scope
from gputop.alerts.rules import parse_condition
from gputop.core.model import Container, Device, Hint, Job, Process, Snapshot, XidEvent

ALICE = Process(pid=7, user="alice", name="python", job=Job("slurm", "1234"))
BOB = Process(pid=8, user="bob", name="train", job=Job("slurm", "99"))


def rule(when: str, name: str = "r", **kw) -> Rule:
    return Rule(name=name, condition=parse_condition(when), text=when, **kw)


def snap(t: float, *devices: Device, hints: tuple[Hint, ...] = ()) -> Snapshot:
    return Snapshot(host="node1", time=float(t), backend="sim", devices=devices, hints=hints)


def hot(t: float, temp: float | None, *procs: Process, index: int = 3) -> Snapshot:
    return snap(t, Device(index, temperature_c=temp, processes=procs))


def run(engine: AlertEngine, snaps) -> list[tuple[float, Alert]]:
    return [(s.time, a) for s in snaps for a in engine.observe(s)]


# ----------------------------------------------------------------- fire and resolve


def test_fires_once_within_one_sample_of_condition_plus_duration():
    engine = AlertEngine([rule("temperature_c > 85 for 2m")])
    # hot from t=50 on, sampled every 10 s: 50 + 120 = 170 is the first sample it may fire at
    out = run(engine, (hot(t, 91 if t >= 50 else 70, ALICE) for t in range(0, 400, 10)))
    assert [(t, a.state) for t, a in out] == [(170.0, "firing")]
    alert = out[0][1]
    assert alert.summary == "GPU 3 temperature 91 °C > 85 for 2m (job 1234, alice)"
    assert alert.since == 50.0 and alert.key == "r/node1/gpu3" and alert.gpu == 3
    assert alert.label("user") == "alice" and alert.label("job") == "1234"
    assert alert.label("value") == "91"


def test_does_not_fire_before_its_duration():
    engine = AlertEngine([rule("temperature_c > 85 for 2m")])
    assert run(engine, (hot(t, 91) for t in range(0, 120, 10))) == []


def test_a_duration_is_held_at_the_sample_nearest_its_end():
    """Real samples drift: a first sample 100 ms late (a real H100) still fires "for 2s" two
    samples later, and the rounding is to the nearest sample, never a whole sample short."""
    late_first = AlertEngine([rule("temperature_c > 85 for 2s")])
    times = [1.1, 2.0, 3.0, 4.0]
    assert [t for t, _ in run(late_first, (hot(t, 91) for t in times))] == [3.0]
    quarter = AlertEngine([rule("temperature_c > 85 for 2s")])
    times = [1 + k / 4 for k in range(12)]  # 1.75 s held + half a 0.25 s gap is short of 2
    assert [t for t, _ in run(quarter, (hot(t, 91) for t in times))] == [3.0]


def test_resolves_once_when_the_condition_stops():
    engine = AlertEngine([rule("temperature_c > 85")])
    temps = [91, 92, 80, 79, 78]
    out = run(engine, (hot(t, temp) for t, temp in enumerate(temps)))
    assert [(t, a.state) for t, a in out] == [(0.0, "firing"), (2.0, "resolved")]
    assert out[1][1].summary == "resolved: GPU 3 temperature 80 °C (held 2s)"
    assert engine.firing == ()


def test_an_unknown_reading_neither_fires_nor_resolves():
    engine = AlertEngine([rule("temperature_c > 85")])
    out = run(engine, [hot(0, 91), hot(1, None), hot(2, None)])
    assert [a.state for _, a in out] == ["firing"]
    assert len(engine.firing) == 1
    engine = AlertEngine([rule("temperature_c > 85 for 2s")])
    assert run(engine, [hot(0, None), hot(5, None)]) == []


def test_a_flapping_condition_fires_once_per_cooldown():
    engine = AlertEngine([rule("temperature_c > 85", cooldown_s=60)])
    # hot on even seconds, cool on odd ones, for 50 s: one fire, one resolve
    out = run(engine, (hot(t, 91 if t % 2 == 0 else 70) for t in range(50)))
    assert [a.state for _, a in out] == ["firing", "resolved"]


def test_a_condition_still_holding_after_the_cooldown_fires_again():
    engine = AlertEngine([rule("temperature_c > 85", cooldown_s=60)])
    temps = {0: 91, 1: 70, 2: 91}  # back within the cooldown, and stays hot
    out = run(engine, (hot(t, temps.get(t, 91)) for t in range(0, 80)))
    assert [(t, a.state) for t, a in out] == [(0.0, "firing"), (1.0, "resolved"),
                                              (60.0, "firing")]
    assert out[-1][1].since == 2.0


def test_dedupes_per_gpu_and_keys_each_gpu_apart():
    engine = AlertEngine([rule("temperature_c > 85")])
    both = [snap(t, Device(0, temperature_c=90), Device(1, temperature_c=95)) for t in range(5)]
    out = run(engine, both)
    assert sorted(a.key for _, a in out) == ["r/node1/gpu0", "r/node1/gpu1"]


def test_the_node_names_the_key():
    engine = AlertEngine([rule("temperature_c > 85")], node="gpu-17")
    (alert,) = engine.observe(hot(0, 91))
    assert alert.key == "r/gpu-17/gpu3" and alert.node == "gpu-17"


# -------------------------------------------------------------------------- scope


def test_scope_by_gpus():
    engine = AlertEngine([rule("temperature_c > 85", scope=Scope(gpus=frozenset({0})))])
    out = run(engine, [snap(0, Device(0, temperature_c=90), Device(1, temperature_c=95))])
    assert [a.gpu for _, a in out] == [0]


def test_scope_by_users_and_jobs():
    by_user = AlertEngine([rule("temperature_c > 85", scope=Scope(users=frozenset({"bob"})))])
    by_job = AlertEngine([rule("temperature_c > 85", scope=Scope(jobs=frozenset({"99"})))])
    two = snap(0, Device(0, temperature_c=90, processes=(ALICE,)),
               Device(1, temperature_c=95, processes=(BOB,)))
    assert [a.gpu for a in by_user.observe(two)] == [1]
    assert [a.gpu for a in by_job.observe(two)] == [1]


def test_a_gpu_leaving_the_scope_resolves():
    engine = AlertEngine([rule("temperature_c > 85", scope=Scope(users=frozenset({"alice"})))])
    out = run(engine, [hot(0, 91, ALICE), hot(1, 91)])
    assert [a.state for _, a in out] == ["firing", "resolved"]
    assert "no longer watched" in out[1][1].summary


# ------------------------------------------------------------------ each condition


def test_every_operator():
    cases = {">": (86, 85), ">=": (85, 84), "<": (10, 11), "<=": (11, 12), "==": (85, 84),
             "!=": (84, 85)}
    for op, (yes, no) in cases.items():
        limit = 85 if op in (">", ">=", "==", "!=") else 11
        engine = AlertEngine([rule(f"temperature_c {op} {limit}")])
        assert engine.observe(hot(0, no)) == (), op
        assert [a.state for a in engine.observe(hot(1, yes))] == ["firing"], op


def test_a_derived_field():
    engine = AlertEngine([rule("memory_pct >= 95")])
    (alert,) = engine.observe(snap(0, Device(0, memory_used_mib=78000, memory_total_mib=80000)))
    assert alert.summary == "GPU 0 memory 97.5% >= 95"


def test_hint_rule_uses_the_hints_message_and_duration():
    engine = AlertEngine([rule("hint straggler for 5m")])
    h = Hint(2, "straggler", "warning", "GPU 2 runs 30% behind its peers")
    snaps = [snap(t, Device(2, processes=(ALICE,)), hints=(h,) if t >= 60 else ())
             for t in range(0, 600, 30)] + [snap(600, Device(2))]
    out = run(engine, snaps)
    assert [(t, a.state) for t, a in out] == [(360.0, "firing"), (600.0, "resolved")]
    assert out[0][1].summary == "GPU 2 runs 30% behind its peers for 5m (job 1234, alice)"
    assert out[0][1].label("code") == "straggler"


def test_health_ecc_and_gpu_lost():
    ecc = AlertEngine([rule("health ecc-uncorrected")])
    (alert,) = ecc.observe(snap(0, Device(1, ecc_errors_uncorrected_volatile=2)))
    assert alert.summary.startswith("GPU 1 has 2 uncorrectable ECC errors")
    lost = AlertEngine([rule("health gpu-lost")])
    out = run(lost, [snap(0, Device(1)), snap(1, Device(1, status="lost", status_reason="fell off the bus")),
                     snap(2, Device(1))])
    assert [(t, a.state) for t, a in out] == [(1.0, "firing"), (2.0, "resolved")]
    assert out[0][1].summary == "GPU 1 is lost: fell off the bus"


def test_health_rows_and_link():
    rows = AlertEngine([rule("health rows-remapped")])
    assert [a.state for a in rows.observe(snap(0, Device(0, remapped_rows_pending=True)))] \
        == ["firing"]
    failed = AlertEngine([rule("health row-remap-failed")])
    assert failed.observe(snap(0, Device(0, remapped_rows_pending=True))) == ()
    assert failed.observe(snap(1, Device(0, remapped_rows_failed=True)))
    link = AlertEngine([rule("health link-degraded")])
    (alert,) = link.observe(snap(0, Device(0, pcie_width=8, pcie_width_max=16)))
    assert "x8 of its x16" in alert.summary


def test_a_lost_gpu_does_not_resolve_its_ecc_alert():
    engine = AlertEngine([rule("health ecc-uncorrected")])
    out = run(engine, [snap(0, Device(0, ecc_errors_uncorrected_volatile=1)),
                       snap(1, Device(0, status="lost"))])
    assert [a.state for _, a in out] == ["firing"]


def _xids(t: float, *codes: int) -> tuple[XidEvent, ...]:
    return tuple(XidEvent(0, code, t) for code in codes)


def test_each_xid_the_sample_brings_fires_explained_and_attributed():
    engine = AlertEngine([rule("health xid", cooldown_s=600)])
    codes = [(), (79,), (), (13,), (13,), (43, 13)]
    out = run(engine, (snap(t, Device(0, xid_last=c[-1] if c else None, processes=(ALICE,),
                                      xid_events=_xids(t, *c)))
                       for t, c in enumerate(codes)))
    # 13 again at 4 s and 5 s: the same subject inside its cooldown; 43 is a new one
    assert [(t, a.label("xid")) for t, a in out] == [(1.0, "79"), (3.0, "13"), (5.0, "43")]
    first = out[0][1]
    assert first.summary == ("GPU 0 Xid 79 (GPU has fallen off the bus): job 1234 (alice) — "
                             f"{first.label('action')}")
    assert first.label("xid_name") == "GPU has fallen off the bus"
    assert (first.label("job"), first.label("user")) == ("job 1234", "alice")
    assert first.key == "r/node1/gpu0/xid79"
    assert engine.firing == ()  # an event has nothing to resolve


def test_an_xid_names_the_process_it_ended():
    engine = AlertEngine([rule("health xid")])
    engine.observe(snap(0, Device(0, processes=(ALICE,))))
    (alert,) = engine.observe(snap(1, Device(0, xid_events=_xids(1, 43))))
    assert "job 1234 (alice)" in alert.summary


def test_gpu_free_and_busy():
    free = AlertEngine([rule("gpu free for 1m")])
    busy = AlertEngine([rule("gpu busy", cooldown_s=60)])
    snaps = [snap(t, Device(0, processes=(ALICE,) if t < 30 else ())) for t in range(0, 200, 10)]
    snaps.append(snap(200, Device(0, processes=(BOB,))))
    assert [(t, a.state) for t, a in run(free, snaps)] == [(90.0, "firing"),
                                                           (200.0, "resolved")]
    assert [(t, a.state) for t, a in run(busy, snaps)] == [(0.0, "firing"), (30.0, "resolved"),
                                                           (200.0, "firing")]


def test_a_lost_gpu_is_neither_free_nor_busy():
    engine = AlertEngine([rule("gpu free")])
    assert engine.observe(snap(0, Device(0, status="lost"))) == ()


def test_process_end_fires_once_and_says_exit_not_seen():
    engine = AlertEngine([rule("process end")])
    proc = replace(ALICE, started=100.0)
    out = run(engine, [snap(1000, Device(0, processes=(proc,))),
                       snap(1001, Device(0, processes=(proc,))),
                       snap(1002, Device(0)), snap(1003, Device(0))])
    assert [t for t, _ in out] == [1002.0]
    alert = out[0][1]
    assert alert.summary == ("process python 7 (job 1234, alice) left GPU 0 after 15:02; "
                             "exit not seen")
    assert alert.key == "r/node1/gpu0/pid7" and alert.label("pid") == "7"


def test_process_gone_from_the_host_says_exited():
    engine = AlertEngine([rule("process end")])
    out = run(engine, [snap(0, Device(0, processes=(replace(ALICE, gone=True),))),
                       snap(60, Device(0))])
    assert " exited GPU 0 after 1:00; exit not seen" in out[0][1].summary


def test_a_reused_pid_ends_the_old_process():
    engine = AlertEngine([rule("process end")])
    out = run(engine, [snap(0, Device(0, processes=(replace(ALICE, started=1.0),))),
                       snap(1, Device(0, processes=(replace(BOB, pid=7, started=5.0),)))])
    assert [a.label("user") for _, a in out] == ["alice"]


def test_no_end_on_the_first_sample_nor_from_a_lost_gpu():
    engine = AlertEngine([rule("process end"), rule("job end", name="j")])
    assert run(engine, [snap(0, Device(0)), snap(1, Device(0, processes=(ALICE,))),
                        snap(2, Device(0, status="lost")),
                        snap(3, Device(0, status="lost"))]) == []


def test_job_end_waits_for_its_last_process():
    engine = AlertEngine([rule("job end")])
    other = replace(ALICE, pid=70)
    out = run(engine, [snap(0, Device(0, processes=(ALICE,)), Device(1, processes=(other,))),
                       snap(1, Device(0), Device(1, processes=(other,))),
                       snap(2, Device(0), Device(1))])
    assert [t for t, _ in out] == [2.0]
    alert = out[0][1]
    assert alert.summary == "job 1234 (alice) ended: its last process left GPU 1; exit not seen"
    assert alert.key == "r/node1/job1234" and alert.label("job") == "1234"


def test_end_scoped_by_user():
    engine = AlertEngine([rule("process end", scope=Scope(users=frozenset({"bob"})))])
    out = run(engine, [snap(0, Device(0, processes=(ALICE, BOB))), snap(1, Device(0))])
    assert [a.label("pid") for _, a in out] == ["8"]


def test_a_pod_labels_the_alert():
    pod = replace(ALICE, job=None, container=Container(runtime="containerd", id="abc",
                                                       pod="trainer-0", pod_namespace="ml"))
    (alert,) = AlertEngine([rule("temperature_c > 85")]).observe(hot(0, 91, pod))
    assert alert.summary.endswith("(pod trainer-0, alice)")
    assert alert.label("pod") == "trainer-0"


# ------------------------------------------------------------------------ restart


def test_a_restart_does_not_refire_what_fired():
    rules = [rule("temperature_c > 85", cooldown_s=600)]
    first = AlertEngine(rules)
    fired = run(first, (hot(t, 91) for t in range(5)))
    assert len(fired) == 1
    again = AlertEngine(rules, journal_state=state_of(a for _, a in fired))
    assert run(again, (hot(t, 91) for t in range(10, 20))) == []
    assert [a.key for a in again.firing] == ["r/node1/gpu3"]


def test_a_restart_resolves_what_resolved_while_down_on_its_first_sample():
    rules = [rule("temperature_c > 85")]
    fired = AlertEngine(rules).observe(hot(0, 91))
    again = AlertEngine(rules, journal_state=state_of(fired))
    out = again.observe(hot(100, 70))
    assert [(a.state, a.at, a.since) for a in out] == [("resolved", 100.0, 0.0)]


def test_a_restart_keeps_the_cooldown_of_what_resolved():
    rules = [rule("temperature_c > 85", cooldown_s=600)]
    engine = AlertEngine(rules)
    journal = run(engine, [hot(0, 91), hot(1, 70)])
    again = AlertEngine(rules, journal_state=state_of(a for _, a in journal))
    assert again.observe(hot(100, 91)) == ()


def test_a_restart_does_not_refire_an_xid_within_its_cooldown():
    rules = [rule("health xid", cooldown_s=600)]
    fired = AlertEngine(rules).observe(snap(0, Device(0, xid_events=_xids(0, 79))))
    assert fired
    again = AlertEngine(rules, journal_state=state_of(fired))
    assert again.observe(snap(30, Device(0, xid_events=_xids(30, 79)))) == ()
