"""Hints under MIG: idle-allocated and memory-nearly-full judged per instance and naming it; a
MIG GPU is never a straggler's peer."""

from __future__ import annotations

from gputop.analysis.hints import analyze
from gputop.core.model import Device, MigInstance, Process, Saturation, Snapshot
from gputop.tui.widgets.gpu import GpuCard
from gputop.tui.widgets.hintbar import hint_line, instance_badges

T0 = 1_763_769_600.0
LONG_AGO = T0 - 9 * 3600


def inst(gi: int, profile: str, sm: float | None, used: float, total: float,
         procs: tuple[Process, ...] = ()) -> MigInstance:
    return MigInstance(gpu_instance_id=gi, compute_instance_id=0, profile=profile,
                       uuid=f"MIG-{gi}", sm_count=16, memory_total_mib=total,
                       memory_used_mib=used, processes=procs,
                       saturation=Saturation(source="gpm", sm_active_pct=sm))


def notebook(gi: int, mib: float = 6100.0) -> Process:
    return Process(pid=50407, user="frank", name="python", command="python -m ipykernel_launcher",
                   gpu_memory_mib=mib, started=LONG_AGO, gpu_instance_id=gi,
                   compute_instance_id=0)


def mig_gpu(index: int, instances: tuple[MigInstance, ...], total: float = 81559.0) -> Device:
    return Device(index=index, name="NVIDIA H100 80GB HBM3", mig_mode="enabled",
                  memory_total_mib=total, memory_used_mib=sum(i.memory_used_mib for i in instances),
                  utilization_gpu_pct=None, mig_instances=instances,
                  processes=tuple(p for i in instances for p in i.processes))


def history(make, seconds: int = 400, step: int = 10) -> list[Snapshot]:
    return [Snapshot(host="h", time=T0 + t, backend="sim", devices=make(t))
            for t in range(0, seconds + 1, step)]


def test_an_instance_nearly_full_is_named_and_the_parent_is_not():
    full = inst(3, "1g.10gb", 80.0, 9700.0, 9984.0)
    roomy = inst(4, "3g.40gb", 80.0, 1000.0, 40320.0)
    hints = analyze(history(lambda t: (mig_gpu(0, (full, roomy)),), seconds=0))
    assert [(h.code, h.device, h.gpu_instance_id) for h in hints] == [
        ("memory-nearly-full", 0, 3)]
    assert hints[0].message.startswith("GPU 0 MIG 1g.10gb (GI 3) memory 97% full (9.5 of 9.8 GiB)")
    # the parent's memory (every instance's summed) nearly full is not a hint of its own
    packed = tuple(inst(gi, "1g.10gb", 80.0, 9000.0, 9984.0) for gi in range(7, 14))
    assert analyze(history(lambda t: (mig_gpu(0, packed, total=64000.0),), seconds=0)) == []


def test_an_idle_instance_holding_memory_is_idle_allocated_and_its_busy_neighbours_are_not():
    def devices(t):
        return (mig_gpu(3, (inst(11, "1g.10gb+me", 18.0, 3112.0, 9984.0),
                            inst(12, "1g.10gb", 0.0, 6112.0, 9984.0, (notebook(12),)),
                            inst(13, "1g.10gb", None, 6112.0, 9984.0, (notebook(13),)))),)

    hints = analyze(history(devices))
    assert [(h.code, h.device, h.gpu_instance_id) for h in hints] == [("idle-allocated", 3, 12)]
    assert hints[0].message == ("GPU 3 MIG 1g.10gb (GI 12): 6.0 GiB held by python (pid 50407, "
                                "frank, started 9.1 h ago) with 0% SM activity for at least 7 min")
    # the hint bar names the instance; its badge goes on that instance's line
    text, severity, gpu = hint_line(hints)
    assert gpu == 3 and "GPU 3 MIG 1g.10gb (GI 12)" in text
    assert instance_badges(hints, 3) == {12: [("idle-allocated", "warning")]}
    card = GpuCard(3)
    card.update(devices(0)[0], when=T0)
    card.instance_hints = instance_badges(hints, 3)
    lines = ["".join(t for t, _ in line) for line in card.compose_lines(120)]
    assert "[idle-allocated]" in lines[5] and "GI 12" in lines[5]
    assert "[idle-allocated]" not in lines[4] + lines[6]


def test_an_instance_that_just_went_idle_is_not_yet_idle_allocated():
    def devices(t):
        sm = 0.0 if t >= 300 else 50.0
        young = Process(pid=9, gpu_memory_mib=6000.0, started=T0 + 200, gpu_instance_id=12,
                        compute_instance_id=0)
        return (mig_gpu(3, (inst(12, "1g.10gb", sm, 6112.0, 9984.0, (young,)),)),)

    assert analyze(history(devices)) == []


def _job(dev_index: int, gi: int | None) -> Process:
    return Process(pid=100 + dev_index, user="alice", command="python train.py --rank 0",
                   gpu_memory_mib=5000.0, gpu_instance_id=gi,
                   compute_instance_id=None if gi is None else 0)


def _gpus(mig: bool):
    """One job on two GPUs, one far busier than the other. Under MIG it runs in a 3g.40gb on
    GPU 0 and a 1g.10gb on GPU 1: not peers, whatever the parents report."""
    def make(t):
        out = []
        for index, util, profile, gi in ((0, 95.0, "3g.40gb", 2), (1, 40.0, "1g.10gb", 9)):
            proc = _job(index, gi if mig else None)
            instances = (inst(gi, profile, util, 5000.0, 40320.0, (proc,)),) if mig else ()
            out.append(Device(index=index, utilization_gpu_pct=util, clock_sm_mhz=1980,
                              clock_sm_max_mhz=1980, memory_total_mib=81559,
                              memory_used_mib=5000, processes=(proc,), mig_instances=instances,
                              mig_mode="enabled" if mig else None))
        return tuple(out)
    return make


def test_instances_of_different_sizes_are_not_straggler_peers():
    assert [h.code for h in analyze(history(_gpus(mig=False), 60, 2))] == ["straggler"]
    assert [h.code for h in analyze(history(_gpus(mig=True), 60, 2))] == []


def test_memory_held_out_of_sight_is_said_once_per_gpu_instance():
    """Compute instances of one GPU instance share its memory. Where no process is visible (a
    container), the idle memory is one hint for the GPU instance, not one per compute instance,
    and none where a compute instance beside it has the processes that hold it."""
    def shared(gi: int, ci: int, procs: tuple[Process, ...] = ()) -> MigInstance:
        return MigInstance(gpu_instance_id=gi, compute_instance_id=ci, profile="1c.3g.40gb",
                           uuid=f"MIG-{gi}-{ci}", sm_count=16, memory_total_mib=40320.0,
                           memory_used_mib=6112.0, processes=procs,
                           saturation=Saturation(source="gpm", sm_active_pct=0.0))

    def devices(t):
        # GPU instance 1's compute instances are 1-3 (0 was destroyed): named as the GPU instance
        return (mig_gpu(0, (shared(1, 1), shared(1, 2), shared(1, 3),
                            shared(2, 0), shared(2, 1, (notebook(2),)))),)

    hints = analyze(history(devices))
    assert [(h.code, h.gpu_instance_id) for h in hints] == [("idle-allocated", 1),
                                                          ("idle-allocated", 2)]
    assert hints[0].message.startswith("GPU 0 MIG 1c.3g.40gb (GI 1): 6.0 GiB held with 0%")
    assert "held by python (pid 50407" in hints[1].message
