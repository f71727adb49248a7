"""Query mode on MIG GPUs prints what a real MIG-enabled H100 prints (590.48.01 captures)."""

from __future__ import annotations

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.formats.query_csv import apps_lines, gpu_lines
from gputop.formats.query_fields import NA, parse_field_list
from tests.support.query import FIX, MIG_FIX, header_names

MIG_CAPTURE = MIG_FIX / "csv_all-fields_1xH100-MIG_590.48.01_load.csv"
WHOLE_CAPTURE = FIX / "csv_all-fields_1xH100-80GB-HBM3_590.48.01_load.csv"  # same GPU, MIG off
MIG_GPU, WHOLE_GPU = 2, 4  # in the sim's mig scenario


def _row(path) -> list[str]:
    return path.read_text().split("\n")[1].split(", ")


def _sim_rows() -> tuple[list, list[str], list[str]]:
    backend = SimBackend(BackendOptions(scenario="mig"))
    backend.open()
    snap = backend.sample()
    fields = parse_field_list(",".join(header_names(MIG_CAPTURE)))
    lines = gpu_lines(fields, snap, count=len(snap.devices)).splitlines()
    return fields, lines[MIG_GPU].split(", "), lines[WHOLE_GPU].split(", ")


def test_every_field_a_mig_parent_loses_is_na_and_the_mig_modes_read_enabled():
    fields, mig, whole = _sim_rows()
    real_mig, real_whole = _row(MIG_CAPTURE), _row(WHOLE_CAPTURE)
    lost = []
    for f, ours_mig, ours_whole, theirs_mig, theirs_whole in zip(
            fields, mig, whole, real_mig, real_whole, strict=True):
        if theirs_mig == NA and theirs_whole != NA:
            lost.append(f.name)
            assert ours_mig == NA, f"{f.name}: the driver reports nothing here under MIG"
        elif theirs_mig != NA and ours_whole != NA:
            assert ours_mig != NA, f"{f.name}: a MIG parent still reports this"
        if f.name.startswith("mig.mode."):
            assert (ours_mig, ours_whole) == (theirs_mig, theirs_whole)
    # what the captures show a MIG parent losing: every utilization.* and the row remapper
    assert {"utilization.gpu", "utilization.memory", "utilization.encoder",
            "utilization.decoder", "remapped_rows.correctable"} <= set(lost)
    assert ("Enabled", "Enabled") == tuple(
        v for f, v in zip(fields, mig) if f.name.startswith("mig.mode."))


def test_compute_apps_lists_the_instances_processes_under_the_parent_uuid():
    backend = SimBackend(BackendOptions(scenario="mig"))
    backend.open()
    snap = backend.sample()
    capture = MIG_FIX / "csv_compute-apps_1xH100-MIG_590.48.01_load.csv"
    fields = parse_field_list(",".join(header_names(capture)), "compute-apps")
    rows = [line.split(", ") for line in apps_lines(fields, snap).splitlines()]
    # the real MIG capture's rows name the parent GPU, not the MIG device
    assert all(r[4].startswith("GPU-") for r in _rows(capture))
    dev = snap.devices[MIG_GPU]
    mine = [r for r in rows if r[4] == dev.uuid]
    assert sorted(int(r[5]) for r in mine) == sorted(
        p.pid for inst in dev.mig_instances for p in inst.processes)
    assert len(rows) == sum(len(d.processes) for d in snap.devices)


def _rows(path) -> list[list[str]]:
    return [line.split(", ") for line in path.read_text().splitlines()[1:]]


