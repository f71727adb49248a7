"""The Prometheus rule file written from gputop's alert rules: each condition kind's PromQL over
the names the exporter serves, the scopes, what is left out and why, and YAML that reads back
exactly, whatever the names hold."""

from __future__ import annotations

import re

import pytest
import yaml

from gputop.alerts.model import Condition, Rule, Scope, Severity
from gputop.commands import exporter, main
from gputop.core.model import Container, Job, Process
from gputop.exporter import own
from gputop.exporter.alert_rules import alert_name, duration, prometheus_rules
from gputop.exporter.labels import MIG_LABELS, OWNER_LABELS, instance_labels, owner_labels
from gputop.exporter.node_label import HOSTNAME_LABELS
from gputop.formats import dcgm


def rule(name: str, condition: Condition, text: str = "", scope: Scope | None = None,
         severity: Severity = "warning") -> Rule:
    return Rule(name=name, condition=condition, text=text or name, severity=severity,
                scope=scope or Scope())


def alerts(text: str) -> dict[str, dict]:
    doc = yaml.safe_load(text)
    [group] = doc["groups"]
    assert group["name"] == "gputop"
    return {r["alert"]: r for r in group["rules"] or []}


def one(r: Rule, options: own.Options | None = None) -> dict:
    [only] = alerts(prometheus_rules([r], options)).values()
    return only


HOT = Condition("threshold", "temperature_c", ">", 85.0, 120.0)


def test_a_threshold_reads_the_dcgm_field_carrying_it_with_its_duration_and_labels():
    got = one(rule("hot", HOT, "temperature_c > 85 for 2m", severity="critical"))
    assert got["alert"] == "GputopHot"
    assert got["expr"] == (f"max without ({', '.join(OWNER_LABELS + MIG_LABELS)}) "
                           "(DCGM_FI_DEV_GPU_TEMP) > 85")
    assert got["for"] == "2m"
    assert got["labels"] == {"severity": "critical", "rule": "hot"}
    assert got["annotations"]["summary"] == (
        "GPU {{ $labels.gpu }} on {{ $labels.hostname }}: temperature_c > 85 for 2m")
    assert "DCGM_FI_DEV_GPU_TEMP is {{ $value }}" in got["annotations"]["description"]


def test_a_threshold_is_in_the_served_unit_and_falls_back_to_gputop_families():
    energy = one(rule("e", Condition("threshold", "energy_j", ">=", 2.5)))
    assert energy["expr"].endswith("(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) >= 2500")  # mJ
    assert "for" not in energy
    hotspot = one(rule("h", Condition("threshold", "temperature_hotspot_c", ">", 100.0)))
    assert hotspot["expr"] == 'gputop_temperature_celsius{sensor="hotspot"} > 100'
    # DCGM's video clock is served only from a counters file: gputop's clock family, in Hz
    video = one(rule("v", Condition("threshold", "clock_video_mhz", "<", 1500.0)))
    assert video["expr"] == 'gputop_clock_hertz{clock="video"} < 1500000000'
    # a counters file without the temperature row: gputop's own temperature, not a dead name
    counters = tuple(m for m in dcgm.DEFAULT if m.name != "DCGM_FI_DEV_GPU_TEMP")
    fallback = one(rule("hot", HOT), own.Options(counters=counters))
    assert fallback["expr"] == 'gputop_temperature_celsius{sensor="gpu"} > 85'


def test_a_derived_share_divides_the_two_readings_it_comes_from():
    got = one(rule("m", Condition("threshold", "memory_pct", ">=", 95.0)))
    owners = ", ".join(OWNER_LABELS)  # memory is a GPU instance's own under MIG
    assert got["expr"] == (f"100 * max without ({owners}) (DCGM_FI_DEV_FB_USED) / "
                           f"(max without ({owners}) (DCGM_FI_DEV_FB_TOTAL) > 0) >= 95")


def test_a_field_nothing_serves_is_left_out_with_why_not_a_stand_in():
    text = prometheus_rules([rule("g", Condition("threshold", "clock_graphics_mhz", ">", 1.0),
                                  "clock_graphics_mhz > 1")])
    assert alerts(text) == {}
    assert yaml.safe_load(text)["groups"][0]["rules"] == []
    assert ("# not expressible in PromQL: rule g (clock_graphics_mhz > 1): the exporter serves "
            "no metric for clock_graphics_mhz") in text
    counters = tuple(m for m in dcgm.DEFAULT if m.field.attr != "ecc_errors_uncorrected_volatile")
    ecc = prometheus_rules([rule("ecc", Condition("health", "ecc-uncorrected"))],
                           own.Options(counters=counters))
    assert alerts(ecc) == {}
    assert "needs DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, which the exporter's counters leave out" in ecc


def test_a_hint_is_gputops_hint_series_on_a_gpu():
    got = one(rule("s", Condition("hint", "straggler", for_s=300.0)))
    assert got["expr"] == 'gputop_hint{code="straggler",gpu!=""} == 1'
    assert got["for"] == "5m"


def test_each_health_event_reads_the_metric_that_carries_it():
    def expr(event: str) -> str:
        return one(rule(event, Condition("health", event)))["expr"]

    assert expr("gpu-lost") == 'gputop_device_status{status="lost"} == 1'
    assert re.fullmatch(r"max without \([^)]*\) \(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL\) > 0",
                        expr("ecc-uncorrected"))
    assert re.fullmatch(r"max without \([^)]*\) \(DCGM_FI_DEV_ROW_REMAP_FAILURE\) > 0",
                        expr("row-remap-failed"))
    rows = expr("rows-remapped")
    assert "(DCGM_FI_DEV_ROW_REMAP_PENDING) > 0 or " in rows
    assert rows.endswith("(DCGM_FI_DEV_RETIRED_PENDING) > 0")
    link = expr("link-degraded")
    assert link == expr("pcie-degraded")
    assert "(DCGM_FI_DEV_PCIE_LINK_WIDTH) < max without" in link
    assert "(DCGM_FI_DEV_GPU_UTIL) >= 50)" in link  # busy, as the hint says it
    xid = expr("xid")
    assert "(DCGM_FI_DEV_XID_ERRORS) > 0 unless max without" in xid
    assert "(DCGM_FI_DEV_XID_ERRORS offset 5m)" in xid
    assert "(changes(DCGM_FI_DEV_XID_ERRORS[5m])) > 0" in xid


def test_gpu_free_and_busy_join_the_process_series_on_the_node_and_gpu():
    procs = "(gputop_process_gpu_memory_bytes or gputop_process_sm_ratio)"
    free = one(rule("free", Condition("gpu", "free", for_s=60.0)))
    assert free["expr"] == (f'gputop_device_status{{status="ok"}} == 1 unless '
                            f"on(instance, hostname, gpu) {procs}")
    busy = one(rule("busy", Condition("gpu", "busy")), own.Options(
        hostname_labels=HOSTNAME_LABELS["both"]))
    assert busy["expr"] == (f'gputop_device_status{{status="ok"}} == 1 and '
                            f"on(instance, Hostname, hostname, gpu) {procs}")
    assert busy["annotations"]["summary"].startswith("GPU {{ $labels.gpu }} on "
                                                     "{{ $labels.Hostname }}")
    none = prometheus_rules([rule("free", Condition("gpu", "free"))],
                            own.Options(top_processes=0))
    assert alerts(none) == {} and "--top-processes 0 serves none" in none


def test_process_and_job_ends_are_left_out_with_why():
    text = prometheus_rules([rule("p", Condition("end", "process"), "process end"),
                             rule("j", Condition("end", "job"), "job end")])
    assert alerts(text) == {}
    assert "# not expressible in PromQL: rule p (process end): a process's end" in text
    assert "# not expressible in PromQL: rule j (job end): a job's end" in text


def test_a_gpu_scope_matches_every_series_read():
    got = one(rule("x", Condition("health", "xid"), scope=Scope(gpus=frozenset({1, 0}))))
    assert got["expr"].count('DCGM_FI_DEV_XID_ERRORS{gpu=~"0|1"}') == 4
    assert "DCGM_FI_DEV_XID_ERRORS)" not in got["expr"]  # no selector left unscoped
    hint = one(rule("s", Condition("hint", "straggler"), scope=Scope(gpus=frozenset({3}))))
    assert hint["expr"] == 'gputop_hint{code="straggler",gpu="3"} == 1'


def test_users_and_jobs_scope_through_the_process_series():
    scope = Scope(users=frozenset({"alice", "bob"}), jobs=frozenset({"42"}))
    got = one(rule("hot", HOT, scope=scope))
    on = "on(instance, hostname, gpu)"
    assert got["expr"].endswith(
        f' and {on} (gputop_process_gpu_memory_bytes{{user=~"alice|bob"}} or '
        f'gputop_process_sm_ratio{{user=~"alice|bob"}}) and {on} '
        f'(gputop_process_gpu_memory_bytes{{hpc_job="42"}} or '
        f'gputop_process_sm_ratio{{hpc_job="42"}})')
    # no process series: the rule is written unscoped, and says so
    text = prometheus_rules([rule("hot", HOT, scope=scope)], own.Options(top_processes=0))
    [unscoped] = alerts(text).values()
    assert "gputop_process" not in unscoped["expr"]
    assert "# scope users alice, bob and jobs 42 left out: --top-processes 0" in text


def test_names_and_values_read_back_exactly_whatever_they_hold():
    """A quote, a backslash, a newline, a template, a regex metacharacter: each reaches
    Prometheus as written, and none breaks the YAML or runs as a template."""
    user = 'o"brien\\x.*|\n\u2028'
    name = "a{{ .x }}-b"
    got = one(Rule(name=name, condition=HOT, text="t", scope=Scope(users=frozenset({user, "z"})),
                   severity="info"))
    assert got["labels"]["rule"] == name
    assert got["annotations"]["description"].startswith(
        'gputop rule \'a{{ "{{" }} .x }}-b\'')  # printed, not run
    # PromQL: the regex literal o"brien\\x\.\*\|<newline>… in a Go string
    assert 'user=~"o\\"brien\\\\\\\\x\\\\.\\\\*\\\\|\\n\u2028|z"' in got["expr"]


def test_alert_names_are_prometheus_names_and_stay_apart():
    assert alert_name("gpu-lost") == "GputopGpuLost"
    assert alert_name("ecc_uncorrected.v2") == "GputopEccUncorrectedV2"
    assert alert_name("9lives") == "Gputop9lives"
    got = alerts(prometheus_rules([rule("a-b", HOT), rule("a_b", HOT), rule("aB", HOT)]))
    assert list(got) == ["GputopAB", "GputopAB_2", "GputopAB_3"]
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in got)


def test_durations_are_prometheus_durations():
    assert [duration(s) for s in (120, 90, 5400, 86400, 1.5, 0)] == [
        "2m", "1m30s", "1h30m", "1d", "1s500ms", "0s"]


def test_the_file_says_dedupe_cooldown_and_routing_are_alertmanagers():
    text = prometheus_rules([rule("hot", HOT)])
    assert "Cool-down, de-duplication and each rule's notify channels are not here" in text
    assert "Alertmanager's job" in text


def test_the_label_names_aggregated_away_are_the_ones_served():
    held = Process(pid=1, container=Container(runtime="containerd", id="a" * 64, name="c",
                                              pod="p", pod_namespace="n"), job=Job("slurm", "7"))
    [labels] = owner_labels([held])
    assert set(labels) == set(OWNER_LABELS)
    added = set(instance_labels({"modelName": "x"}, "1g.10gb", 3)) - {"modelName"}
    assert added == set(MIG_LABELS)


# ------------------------------------------------------------------ the command line


@pytest.fixture
def no_device(monkeypatch):
    import gputop.backends

    def refuse(*args, **kwargs):
        raise AssertionError("--alert-rules opened a device")

    monkeypatch.setattr(gputop.backends, "open_backend", refuse)


def test_alert_rules_prints_the_file_without_opening_a_device(monkeypatch, capsys, no_device):
    asked = []

    def rules_in_force(config_path, no_config):
        asked.append((config_path, no_config))
        return (rule("hot", HOT),)

    monkeypatch.setattr(exporter, "rules_in_force", rules_in_force)
    assert main.main(["--config", "/etc/g.toml", "exporter", "--alert-rules",
                      "--hostname-label", "Hostname"]) == 0
    assert asked == [("/etc/g.toml", False)]
    [hot] = alerts(capsys.readouterr().out).values()
    assert "{{ $labels.Hostname }}" in hot["annotations"]["summary"]


def test_alert_rules_writes_the_file_named(monkeypatch, tmp_path, capsys, no_device):
    monkeypatch.setattr(exporter, "rules_in_force", lambda path, no: (rule("hot", HOT),))
    out = tmp_path / "gputop.rules.yml"
    assert main.main(["--no-config", "exporter", "--alert-rules", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert list(alerts(out.read_text())) == ["GputopHot"]
    assert main.main(["exporter", "--alert-rules", str(tmp_path / "no" / "such")]) == 2
    assert "exporter: --alert-rules" in capsys.readouterr().err


def test_config_is_still_refused_where_the_exporter_reads_no_rules(capsys):
    assert main.main(["--config", "/etc/g.toml", "exporter", "--listen", "127.0.0.1:1"]) == 2
    assert "only the dashboard reads a settings file" in capsys.readouterr().err


def test_alert_rules_reads_the_settings_files_rules_and_checks_them(tmp_path, capsys, no_device):
    good = tmp_path / "config.toml"
    good.write_text('[alerts]\ndefaults = false\n[[alerts.rule]]\nname = "hot"\n'
                    'when = "temperature_c > 85 for 2m"\n')
    assert main.main(["--config", str(good), "exporter", "--alert-rules"]) == 0
    assert list(alerts(capsys.readouterr().out)) == ["GputopHot"]
    bad = tmp_path / "bad.toml"
    bad.write_text('[alerts]\n[[alerts.rule]]\nname = "hot"\nwhen = "temprature_c > 85"\n')
    assert main.main(["--config", str(bad), "exporter", "--alert-rules"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "alert rule 'hot'" in err and "temperature_c" in err
