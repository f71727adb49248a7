"""The rule file `gputop exporter --alert-rules` writes, through the real promtool: `check rules`
accepts it for every kind of rule, and `test rules` fires each expression where gputop's rule
holds, on series shaped as the exporter serves them, and nowhere else."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import yaml

from gputop.alerts.model import Condition, Rule, Scope
from gputop.exporter.alert_rules import prometheus_rules
from tests.support.paths import ROOT
from tests.support.prom_harness import find

EVERY_KIND = (
    Rule("hot", Condition("threshold", "temperature_c", ">", 85.0, 120.0),
         "temperature_c > 85 for 2m", scope=Scope(gpus=frozenset({0}))),
    Rule("memory-full", Condition("threshold", "memory_pct", ">=", 95.0), "memory_pct >= 95"),
    Rule("hotspot", Condition("threshold", "temperature_hotspot_c", ">", 100.0),
         "temperature_hotspot_c > 100"),
    Rule("busy-sm", Condition("threshold", "process_sm_pct", ">", 90.0), "process_sm_pct > 90"),
    Rule("graphics", Condition("threshold", "clock_graphics_mhz", ">", 1.0),
         "clock_graphics_mhz > 1"),  # served nowhere: left out
    Rule("straggler", Condition("hint", "straggler", for_s=300.0), "hint straggler for 5m"),
    *(Rule(e, Condition("health", e), f"health {e}", "critical")
      for e in ("xid", "gpu-lost", "ecc-uncorrected", "rows-remapped", "row-remap-failed",
                "link-degraded")),
    Rule("free", Condition("gpu", "free", for_s=60.0), "gpu free for 1m", "info"),
    Rule("alice-busy", Condition("gpu", "busy"), "gpu busy", "info",
         scope=Scope(users=frozenset({"alice"}))),
    Rule("bob-busy", Condition("gpu", "busy"), "gpu busy", "info",
         scope=Scope(users=frozenset({'b"ob|.*', "dave"}), jobs=frozenset({"42"}))),
    Rule("process-end", Condition("end", "process"), "process end"),  # left out
    Rule("job-end", Condition("end", "job"), "job end"),  # left out
    Rule('odd {{ "name" }}\n', Condition("hint", "xid"), "hint xid"),
)


def write(tmp_path, rules=EVERY_KIND) -> tuple:
    path = tmp_path / "gputop.rules.yml"
    path.write_text(prometheus_rules(rules))
    return path, {r["alert"]: r for r in yaml.safe_load(path.read_text())["groups"][0]["rules"]}


def test_promtool_accepts_a_rule_of_every_kind(tmp_path):
    path, alerts = write(tmp_path)
    out = subprocess.run([find("promtool"), "check", "rules", str(path)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    left_out = 3  # graphics, process-end, job-end
    assert f"SUCCESS: {len(EVERY_KIND) - left_out} rules found" in out.stdout
    assert len(alerts) == len(EVERY_KIND) - left_out


def test_the_command_writes_a_file_promtool_accepts(tmp_path):
    """`gputop exporter --alert-rules FILE`, the real process, with the rules it is handed."""
    path = tmp_path / "out.yml"
    code = ("import sys; from gputop.commands import exporter, main; "
            "from tests.e2e.exporter.test_alert_rules_promtool import EVERY_KIND; "
            "exporter.rules_in_force = lambda path, no: EVERY_KIND; "
            "sys.exit(main.main(sys.argv[1:]))")
    run = subprocess.run([sys.executable, "-c", code, "--backend", "sim", "exporter",
                          "--alert-rules", str(path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    out = subprocess.run([find("promtool"), "check", "rules", str(path)], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr


NODE = {"instance": "n1:9400", "job": "gpus", "hostname": "n1"}


def series(name: str, **labels: str) -> str:
    return name + "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in {**NODE, **labels}.items()) \
        + "}"


def render(template: str, labels: dict[str, str], value: str) -> str:
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    return text.replace("{{ $value }}", value)


def test_promtool_fires_each_rule_where_gputops_rule_holds(tmp_path):
    """Minute by minute: a hot GPU 0 (a job starting on it halfway), a hot GPU 1 out of scope;
    a new Xid shown by a new err_code series, one shown by a changed value, an old one under a
    new job (no new Xid); GPU 2 free, GPU 3 alice's; a straggler hint on GPU 2 and the node's."""
    path, alerts = write(tmp_path)
    temp, xid = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"
    inputs = [
        (series(temp, gpu="0"), "80 90x9"),
        (series(temp, gpu="0", hpc_job="7"), "_ _ 90x8"),  # a job starts: no second alert
        (series(temp, gpu="1"), "90x10"),  # out of the rule's scope
        (series(xid, gpu="0", err_code="0"), "0 0"),
        (series(xid, gpu="0", err_code="43"), "_ _ 43x8"),
        (series(xid, gpu="1"), "0 0 0 79x7"),
        (series(xid, gpu="2", err_code="13"), "13x10"),
        (series(xid, gpu="2", err_code="13", hpc_job="7"), "_ _ _ 13x7"),
        *((series("gputop_device_status", gpu=g, status="ok"), "1x10") for g in "0123"),
        (series("gputop_process_gpu_memory_bytes", gpu="0", pid="1", user="carol"), "1x10"),
        (series("gputop_process_gpu_memory_bytes", gpu="1", pid="2", user="b\"ob|.*"), "1x10"),
        (series("gputop_process_gpu_memory_bytes", gpu="3", pid="3", user="alice"), "1x10"),
        (series("gputop_process_gpu_memory_bytes", gpu="3", pid="4", user="bob",
                hpc_job="42"), "1x10"),
        (series("gputop_hint", gpu="2", code="straggler", severity="warning"), "1x10"),
        (series("gputop_hint", gpu="", code="straggler", severity="warning"), "1x10"),
    ]

    def fired(alert: str, value: str, **labels: str) -> dict:
        rule = alerts[alert]
        got = {**NODE, **labels, **rule["labels"]}
        return {"exp_labels": got, "exp_annotations": {
            k: render(v, got, value) for k, v in rule["annotations"].items()}}

    checks = [
        {"eval_time": "4m", "alertname": "GputopHot", "exp_alerts": [fired("GputopHot", "90",
                                                                            gpu="0")]},
        {"eval_time": "6m", "alertname": "GputopXid", "exp_alerts": [
            fired("GputopXid", "43", gpu="0", err_code="43"), fired("GputopXid", "79", gpu="1")]},
        {"eval_time": "9m", "alertname": "GputopXid", "exp_alerts": []},  # 5m on: resolved
        {"eval_time": "3m", "alertname": "GputopFree", "exp_alerts": [
            fired("GputopFree", "1", gpu="2", status="ok")]},
        {"eval_time": "3m", "alertname": "GputopAliceBusy", "exp_alerts": [
            fired("GputopAliceBusy", "1", gpu="3", status="ok")]},
        {"eval_time": "3m", "alertname": "GputopBobBusy", "exp_alerts": []},  # no job 42 there
        {"eval_time": "6m", "alertname": "GputopStraggler", "exp_alerts": [
            fired("GputopStraggler", "1", gpu="2", code="straggler", severity="warning")]},
    ]
    spec = tmp_path / "tests.yml"
    spec.write_text(json.dumps({
        "rule_files": [str(path)], "evaluation_interval": "1m",
        "tests": [{"interval": "1m",
                   "input_series": [{"series": s, "values": v} for s, v in inputs],
                   "alert_rule_test": checks}]}))
    out = subprocess.run([find("promtool"), "test", "rules", str(spec)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
