"""dcgm-exporter's consumers, unchanged, on gputop's scrapes: published throttle alerts (through
`promtool test rules` and a real Prometheus), published per-job recording rules over a Slurm job
that gputop attributes on the C fake NVML, and every DCGM field the fake NVML answers, served with
the table's type and unit.

The simulator's exporters sample once a minute, so each serves the snapshot that
`gputop snapshot --seed 1` prints for the same scenario; the fake NVML runs with its live values
frozen (`vary = 0`), so the exporter and `gputop snapshot` read the same figures."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from gputop.formats import dcgm, dcgm_counters
from tests.support import cfake
from tests.support.kernel_lab import slurm_step
from tests.support.paths import FIXTURES
from tests.support.prom_harness import ROOT, Prometheus, find, start_exporter, stop, wait_for

HERE = FIXTURES / "dcgm-exporter"
ALERTS = HERE / "hardware-observer-operator_3d87061_dcgm-alerts.yaml"
JOB_RULES = HERE / "slurm-node-dashboard_eec6686_gpu_utilization.yml"
THROTTLE = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
# The clock-event reason (gputop's name of NVML's nvmlClocksEventReason*) whose bit each
# published alert tests.
ALERT_REASON = {"GPUPowerBrakeThrottle": "hw_power_brake_slowdown",
                "GPUThermalHWThrottle": "hw_thermal_slowdown",
                "GPUThermalSWThrottle": "sw_thermal_slowdown",
                "GPUSyncBoostThrottle": "sync_boost",
                "GPUSlowdownThrottle": "hw_slowdown",
                "GPUPowerThrottle": "sw_power_cap"}
SCENARIOS = ("power-capped", "straggler", "mig")
JOB = "4242"
_LINE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> tuple[dict[str, str], dict[str, list[tuple[dict[str, str], float]]]]:
    """An exposition's TYPE lines and samples, by metric name, exactly as written."""
    types: dict[str, str] = {}
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            m = _LINE.match(line)
            assert m, line
            samples.setdefault(m.group(1), []).append(
                (dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return types, samples


def snapshot_json(*args: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run([sys.executable, "-m", "gputop", "snapshot", "--json", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True, env=env)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def sims():
    """An exporter per scenario, both node labels on, with the snapshot each serves."""
    running = {}
    try:
        for scenario in SCENARIOS:
            running[scenario] = (start_exporter("--backend", "sim", "--scenario", scenario,
                                                "--seed", "1", "--interval", "60",
                                                "--hostname-label", "both"),
                                 snapshot_json("--backend", "sim", "--scenario", scenario,
                                               "--seed", "1"))
        yield running
    finally:
        for exporter, _ in running.values():
            stop(exporter.proc)




@pytest.fixture(scope="module")
def slurm_node(tmp_path_factory):
    """The C fake NVML with 4 GPUs: Slurm job 4242's process on GPUs 0 and 1 (70 % and 50 %
    busy), a process of no job on GPU 2, GPU 3 idle; live values frozen. Yields the
    environment that points nvidia-ml-py at it."""
    why = cfake.available()
    if why is not None:
        pytest.skip(why)
    folder = cfake.build(tmp_path_factory.mktemp("fakenvml"))
    other = subprocess.Popen(["sleep", "600"])
    try:
        with slurm_step(JOB) as job_pid:
            config = folder / "node.conf"
            config.write_text("gpu_count = 4\nvary = 0\ngpu.*.ecc_errors = 3\n"
                              "gpu.0.util_gpu = 70\ngpu.1.util_gpu = 50\ngpu.2.util_gpu = 20\n"
                              "gpu.3.util_gpu = 0\n"
                              f"gpu.0.procs = {job_pid}:4G\ngpu.1.procs = {job_pid}:4G\n"
                              f"gpu.2.procs = {other.pid}:2G\n")
            yield dict(os.environ, LD_LIBRARY_PATH=str(folder), FAKENVML_CONFIG=str(config))
    finally:
        other.kill()
        other.wait(10)


def render(template: str, labels: dict[str, str]) -> str:
    """An annotation as Prometheus renders these rules' templates: ``$labels.X`` and
    ``$labels`` (Go prints a map as ``map[k:v …]``, keys sorted)."""
    whole = "map[" + " ".join(f"{k}:{v}" for k, v in sorted(labels.items())) + "]"
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    text = text.replace("{{ $labels }}", whole)
    assert "{{" not in text, text  # a template form this helper does not know
    return text


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in labels.items()) + "}"


def test_published_throttle_alerts_fire_exactly_where_gputop_reports_the_reason(sims, tmp_path):
    """promtool, fed each scenario's scrape as it is, fires each alert on the series of the GPUs
    whose snapshot holds its reason, and on no other."""
    rules = {r["alert"]: r for g in yaml.safe_load(ALERTS.read_text())["groups"]
             for r in g["rules"]}
    assert set(rules) == set(ALERT_REASON)
    fired: dict[str, dict[str, list[str]]] = {}
    tests = []
    for scenario, (exporter, snap) in sims.items():
        _, samples = parse(exporter.metrics())
        reasons = {str(d["index"]): set(d["clock_event_reasons"] or ()) for d in snap["devices"]}
        throttles = samples[THROTTLE]
        assert len(throttles) >= 8
        checks = []
        for alert, reason in ALERT_REASON.items():
            expected = [
                {"exp_labels": {**labels, **rules[alert]["labels"]},
                 "exp_annotations": {k: render(v, labels)
                                     for k, v in rules[alert]["annotations"].items()}}
                for labels, _ in throttles if reason in reasons[labels["gpu"]]]
            fired.setdefault(scenario, {})[alert] = sorted(
                e["exp_labels"]["gpu"] for e in expected)
            checks.append({"eval_time": "6m", "alertname": alert, "exp_alerts": expected})
        tests.append({"interval": "1m",
                      "input_series": [{"series": series(THROTTLE, labels),
                                        "values": f"{value:g}+0x10"}
                                       for labels, value in throttles],
                      "alert_rule_test": checks})
    spec = tmp_path / "throttle-tests.yml"
    spec.write_text(json.dumps({"rule_files": [str(ALERTS)], "evaluation_interval": "1m",
                                "tests": tests}))
    out = subprocess.run([find("promtool"), "test", "rules", str(spec)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    # what the issue saw go missing: a power alert on each power-capped GPU, a thermal one on the
    # straggler's hot GPU 5, nothing on the MIG node
    assert fired["power-capped"]["GPUPowerThrottle"] == [str(i) for i in range(8)]
    assert fired["straggler"]["GPUThermalSWThrottle"] == ["5"]
    assert not any(fired["mig"].values())


def test_a_real_prometheus_runs_the_published_rules_on_gputop(sims, slurm_node, tmp_path):
    """Prometheus loads the alert and recording rules unchanged and evaluates them on gputop's
    series: throttle alerts go pending where the reason holds; the per-job rules' expressions
    give the job gputop attributes, with its GPUs' figures."""
    fake = start_exporter("--backend", "nvml", "--interval", "1", env=slurm_node)
    capped, straggler = sims["power-capped"][0], sims["straggler"][0]
    prom = Prometheus(tmp_path, [capped.target, straggler.target, fake.target],
                      rule_files=(ALERTS, JOB_RULES))
    try:
        def alerts(name: str) -> list[tuple[str, str]]:
            return sorted((s["metric"]["instance"], s["metric"]["gpu"])
                          for s in prom.query(f'ALERTS{{alertname="{name}"}}'))

        wait_for(lambda: len(alerts("GPUPowerThrottle")) == 8, 30.0, "the power alerts")
        assert alerts("GPUPowerThrottle") == [(capped.target, str(i)) for i in range(8)]
        wait_for(lambda: alerts("GPUThermalSWThrottle"), 10.0, "the thermal alert")
        assert alerts("GPUThermalSWThrottle") == [(straggler.target, "5")]
        groups = prom.api("rules")["groups"]
        assert {g["name"] for g in groups} == {"NVIDIA DCGM Throttling Alerts", "dcgm_job_metrics"}
        for rule in next(g for g in groups if g["name"] != "dcgm_job_metrics")["rules"]:
            assert rule["health"] == "ok", rule
        # the recording rules' own expressions, evaluated now (their group runs once a minute)
        exprs = {r["record"]: r["expr"] for g in yaml.safe_load(JOB_RULES.read_text())["groups"]
                 for r in g["rules"]}

        def by_job(record: str) -> dict[str, float]:
            return {s["metric"].get("hpc_job", ""): float(s["value"][1])
                    for s in prom.query(exprs[record])}

        wait_for(lambda: by_job("job:gpu_utilization:current_avg"), 20.0, "the job's series")
        assert by_job("job:gpu_utilization:current_avg") == {JOB: pytest.approx(60.0)}
        assert by_job("job:gpu_count:current") == {JOB: 2.0}
        # its process holds 4 GiB on each of its two GPUs ("bytes" in the rule's name, MiB in
        # dcgm-exporter's field, as the rules' authors note)
        assert by_job("job:gpu_memory:current_used_bytes") == {JOB: 8192.0}
        assert by_job("job:gpu_underutilized:bool") == {}  # 60 % on average: not below 30
        # the other GPUs' series carry no job: the one of no job and the idle one
        unlabelled = prom.query(f'DCGM_FI_DEV_GPU_UTIL{{instance="{fake.target}",hpc_job=""}}')
        assert sorted(s["metric"]["gpu"] for s in unlabelled) == ["2", "3"]
    finally:
        prom.stop()
        stop(fake.proc)


def test_promtool_records_the_job_gputop_attributes(slurm_node, tmp_path):
    """The published per-job recording rules, in `promtool test rules`, over the fake NVML
    node's scrape as it is: the job gputop attributes, with its two GPUs' figures."""
    exporter = start_exporter("--backend", "nvml", "--interval", "1", env=slurm_node)
    try:
        _, samples = parse(exporter.metrics())
    finally:
        stop(exporter.proc)
    inputs = [{"series": series(name, labels), "values": f"{value:g}+0x10"}
              for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE")
              for labels, value in samples[name]]
    used = {labels["gpu"]: value for labels, value in samples["DCGM_FI_DEV_FB_USED"]}
    free = {labels["gpu"]: value for labels, value in samples["DCGM_FI_DEV_FB_FREE"]}
    assert used["0"] == used["1"] == 4096.0  # the job's process holds 4 GiB on each
    pct = [used[g] / (used[g] + free[g]) * 100 for g in ("0", "1")]

    def expect(record: str, value: float) -> dict:
        return {"expr": record, "eval_time": "2m",
                "exp_samples": [{"labels": f'{record}{{hpc_job="{JOB}"}}', "value": value}]}

    spec = tmp_path / "job-tests.yml"
    spec.write_text(json.dumps({"rule_files": [str(JOB_RULES)], "evaluation_interval": "1m",
                                "tests": [{"interval": "1m", "input_series": inputs,
                                           "promql_expr_test": [
        expect("job:gpu_utilization:current_avg", 60.0),
        expect("job:gpu_count:current", 2.0),
        expect("job:gpu_memory:current_used_bytes", 8192.0),
        expect("job:gpu_memory:current_max_pct", max(pct)),
        {"expr": "job:gpu_underutilized:bool", "eval_time": "2m", "exp_samples": []},
    ]}]}))
    out = subprocess.run([find("promtool"), "test", "rules", str(spec)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_field_the_fake_nvml_answers_is_served_with_the_tables_type_and_unit(slurm_node,
                                                                                   tmp_path):
    """A counters file naming every field gputop serves: each one NVML answers is served, with
    the table's type, its value in DCGM's unit (the snapshot's figure times the table's scale),
    and each one NVML does not answer is absent, not 0."""
    rows = [f"{f.name}, {f.type}, {f.help.replace(',', ' ')}" for f in dcgm.FIELDS]
    counters = tmp_path / "all.csv"
    counters.write_text("# every field gputop serves\n" + "\n".join(rows) + "\n")
    exporter = start_exporter("--backend", "nvml", "--interval", "1", "-f", str(counters),
                              env=slurm_node)
    try:
        snap_doc = snapshot_json("--backend", "nvml", env=slurm_node)
        types, samples = parse(exporter.metrics())
    finally:
        stop(exporter.proc)
    from gputop.core.model import snapshot_from_json

    snap = snapshot_from_json(snap_doc)
    answered = []
    for f in dcgm.FIELDS:
        expected = {str(d.index): dcgm.value(f, snap, d) for d in snap.devices}
        if f.type == "label":
            got = {labels["gpu"]: labels.get(f.name) for labels, _ in samples["DCGM_FI_DEV_GPU_UTIL"]}
            assert got == {g: v if v is None or isinstance(v, str) else f"{v:g}"
                           for g, v in expected.items()}, f.name
            answered += [f.name] if any(v is not None for v in expected.values()) else []
            continue
        if all(v is None for v in expected.values()):
            assert f.name not in samples, f.name  # not answered: no series, not a 0
            continue
        answered.append(f.name)
        assert types[f.name] == f.type, f.name
        got = {labels["gpu"]: value for labels, value in samples[f.name]}
        for gpu, value in expected.items():
            if f.name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":  # it counts on between reads
                assert got[gpu] == pytest.approx(value, rel=1e-3)
            else:
                assert got[gpu] == pytest.approx(value, rel=1e-9), (f.name, gpu)
    for name in ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX",
                 "DCGM_FI_DEV_SLOWDOWN_TEMP", "DCGM_FI_DEV_SHUTDOWN_TEMP",
                 "DCGM_FI_DEV_GPU_MAX_OP_TEMP", "DCGM_FI_DEV_MAX_SM_CLOCK", "DCGM_FI_DEV_FAN_SPEED",
                 "DCGM_FI_DEV_PSTATE", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                 "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_COUNT", "DCGM_FI_DEV_SERIAL"):
        assert name in answered, name
    assert len(answered) >= 50
    # the job's GPUs carry its id on every DCGM series; GPU 2 (no job) and 3 (idle) none
    jobs = {labels["gpu"]: labels.get("hpc_job") for labels, _ in samples["DCGM_FI_DEV_FB_USED"]}
    assert jobs == {"0": JOB, "1": JOB, "2": None, "3": None}


def test_a_counters_file_is_read_at_start_with_a_line_per_row_not_served(tmp_path):
    """An operator's file as it is: served, one line per row gputop does not serve. A row of
    the wrong shape (here an unknown type) is one line and exit 2, before any device is
    opened."""
    operator = HERE / "hardware-observer-operator_3d87061_dcgm_metrics.csv"
    exporter = start_exporter("--backend", "sim", "--interval", "60", "-f", str(operator))
    try:
        types, samples = parse(exporter.metrics())
        assert types["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] == "counter"  # the file's type
        assert "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX" in samples
        assert "DCGM_FI_DEV_SM_OCCUPANCY" not in samples  # not in the file
    finally:
        stop(exporter.proc)
    notes = exporter.proc.stderr.read().decode().splitlines()
    expected = dcgm_counters.parse(operator.read_text()).notes
    assert len(expected) == 23  # 21 fields not served, 2 listed twice
    assert [n for n in notes if n.startswith(f"gputop exporter: {operator}: line ")] == [
        f"gputop exporter: {operator}: {note}" for note in expected]
    bad = tmp_path / "bad.csv"
    bad.write_text("DCGM_FI_DEV_SM_CLOCK, gauge, ok\nDCGM_FI_DEV_GPU_TEMP, gaug, typo\n")
    out = subprocess.run([sys.executable, "-m", "gputop", "exporter", "--backend", "sim",
                          "--listen", "127.0.0.1:0", "-f", str(bad)], cwd=ROOT,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"gputop: exporter: counters file {bad}: line 2: DCGM_FI_DEV_GPU_TEMP: type 'gaug' is "
        "none of gauge, counter, histogram, summary, label"]
