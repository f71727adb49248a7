"""Pure parts of the cluster view: host validation, ssh argv, exit classification, the bounded
line splitter, the protocol decoder, the agentless parsers, aggregation, node state machine."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from gputop.backends.base import BackendOptions
from gputop.backends.sim.backend import SimBackend
from gputop.cluster import remote, states
from gputop.cluster.agentless import NpuSmiStream, NvidiaSmiStream
from gputop.cluster.aggregate import filter_rows, node_row, sort_rows, users_view
from gputop.cluster.hosts import HostSpec, load_hosts_file, validate_host
from gputop.cluster.lines import LineSplitter, Oversize
from gputop.cluster.node import Node, NodeStatus, Policy
from gputop.cluster.protocol import (
    AgentDecoder,
    Checked,
    Hello,
    Problem,
    build_snapshot,
    clean_document,
    decode_snapshot,
)
from gputop.cluster.summary import summarize_document, summarize_snapshot
from gputop.core.errors import UsageError
from gputop.core.model import snapshot_from_json, snapshot_to_json
from tests.support.paths import FIXTURES


def sim_doc(scenario: str = "training") -> dict:
    backend = SimBackend(BackendOptions(scenario=scenario))
    backend.open()
    return snapshot_to_json(backend.sample())


# ------------------------------------------------------------------ hosts

@pytest.mark.parametrize("name", ["node1", "user@node-1.example.com", "10.0.0.7", "[::1]",
                                  "fe80::1%eth0", "ssh://alice@gpu7:2222", "gpu_7"])
def test_plausible_host_names_pass(name):
    assert validate_host(name) == name


@pytest.mark.parametrize("name,why", [
    ("-oProxyCommand=touch /tmp/x", "starts with '-'"), ("-p", "starts with '-'"),
    ("a b", "no host name has"), ("a;rm -rf /", "no host name has"), ("$(id)", "no host name has"),
    ("`id`", "no host name has"), ("a\nb", "no host name has"),
    ("node1\n", "no host name has"), ("a'b", "no host name has"),
    ("", "empty"), ("x" * 300, "no host name has"),
])
def test_implausible_host_names_are_refused(name, why):
    with pytest.raises(UsageError, match=why):
        validate_host(name)


def test_hosts_file(tmp_path):
    f = tmp_path / "hosts.toml"
    f.write_text('[[host]]\nname = "a"\n[[host]]\nname = "b"\nremote_command = "gputop agent"\n'
                 'ssh_args = ["-p", "2222"]\n')
    assert load_hosts_file(f) == [HostSpec("a"), HostSpec("b", "gputop agent", ("-p", "2222"))]
    for text, msg in (('[[host]]\nname = "-oX=y"\n', "starts with '-'"),
                      ('[[host]]\nname = "a"\nuser = "x"\n', "unknown key"),
                      ('[[host]]\nname = "a"\nssh_args = ["b"]\n', "only ssh options"),
                      ('[[host]]\nname = "a"\nremote_command = "a\\nb"\n', "single line"),
                      ("name = 1\n", "expected one or more"), ("[[host]\n", "not valid TOML")):
        f.write_text(text)
        with pytest.raises(UsageError, match=msg):
            load_hosts_file(f)
    with pytest.raises(UsageError, match="not found"):
        load_hosts_file(tmp_path / "missing.toml")


# ------------------------------------------------------------------ remote commands and argv

def test_ssh_argv_is_a_list_with_double_dash_before_the_destination():
    spec = HostSpec("node1", None, ("-p", "2222"))
    argv = remote.ssh_argv(spec, remote.agent_command(0.5), ssh_config="/tmp/cfg",
                           connect_timeout=7)
    assert argv[:2] == ["ssh", "-T"]
    assert "BatchMode=yes" in argv and "ConnectTimeout=7" in argv
    assert any(a.startswith("ServerAliveInterval=") for a in argv)
    assert argv[argv.index("-F") + 1] == "/tmp/cfg"
    assert argv[-3:] == ["--", "node1", "gputop agent --interval 0.5"]
    assert argv.index("-p") < argv.index("--")
    assert not any("StrictHostKeyChecking" in a for a in argv)  # the user's config decides
    with pytest.raises(UsageError):
        remote.ssh_argv(HostSpec("-oProxyCommand=x"), "true")


def test_remote_commands_are_constants_and_quoted():
    assert shlex.split(remote.agent_command(2)) == ["gputop", "agent", "--interval", "2"]
    words = shlex.split(remote.nvidia_smi_command(1))
    assert words[0] == "nvidia-smi" and "--format=csv,noheader,nounits" in words
    assert words[-2:] == ["-l", "1"]
    assert shlex.split(remote.nvidia_smi_command(0.25))[-2:] == ["-lms", "250"]
    words = shlex.split(remote.npu_smi_command(2))
    assert words[:2] == ["sh", "-c"] and len(words) == 3 and "npu-smi info" in words[2]
    spec = HostSpec("h", remote_command="custom agent")
    assert remote.remote_command(spec, remote.MODE_AGENT, 1, "override") == "custom agent"
    assert remote.remote_command(HostSpec("h"), remote.MODE_AGENT, 1, "override") == "override"


# ------------------------------------------------------------------ classification

@pytest.mark.parametrize("code,stderr,state", [
    (255, "root@127.0.0.1: Permission denied (publickey).\n", states.AUTH_FAILED),
    (255, "@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n@@@@\n"
          "Host key verification failed.\n", states.HOST_KEY_REJECTED),
    (255, "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict "
          "checking.\nHost key verification failed.\n", states.HOST_KEY_REJECTED),
    (255, "ssh: connect to host 10.0.0.9 port 22: Connection refused\n", states.UNREACHABLE),
    (255, "ssh: connect to host 10.0.0.9 port 22: Connection timed out\n", states.UNREACHABLE),
    (255, "ssh: Could not resolve hostname nodex: Name or service not known\n",
     states.UNREACHABLE),
    (127, "bash: line 1: gputop: command not found\n", states.NO_GPUTOP),
    (1, "/usr/bin/python3: No module named gputop\n", states.NO_GPUTOP),
    (1, "gputop: no backend could start\n", states.FAILED),
    (-9, "", states.UNREACHABLE),
])
def test_classify_exit(code, stderr, state):
    verdict = states.classify_exit(code, stderr, had_data=False)
    assert verdict.state == state
    assert verdict.reason and "\n" not in verdict.reason


# ------------------------------------------------------------------ bounded lines

def test_line_splitter_caps_without_buffering():
    s = LineSplitter(max_line=10)
    assert s.feed(b"abc\nde") == [b"abc"]
    assert s.feed(b"f\n") == [b"def"]
    out = []
    for _ in range(1000):  # a 1 MB line arriving in pieces
        out += s.feed(b"x" * 1000)
        assert s.buffered <= 10
    out += s.feed(b"\nok\n")
    assert out == [Oversize(1_000_000), b"ok"]
    assert s.feed(b"tail") == [] and s.close() == [b"tail"]


# ------------------------------------------------------------------ protocol

def test_decoder_hello_then_snapshots():
    d = AgentDecoder()
    assert d.feed(b"Welcome!") is None  # shell noise before the hello is tolerated
    hello = d.feed(json.dumps({"hello": "gputop", "version": "0.1.0", "schema": "gputop/1",
                               "backend": "sim", "host": "n"}).encode())
    assert isinstance(hello, Hello) and hello.backend == "sim"
    checked = d.feed(json.dumps(sim_doc()).encode())
    assert isinstance(checked, Checked) and len(build_snapshot(checked.doc).devices) == 8
    bad = d.feed(b"{not json")
    assert isinstance(bad, Problem) and bad.state == states.PROTOCOL_ERROR and not bad.fatal
    big = d.feed(Oversize(100 << 20))
    assert isinstance(big, Problem) and "oversized" in big.reason
    other = dict(sim_doc(), schema="gputop/2")
    p = d.feed(json.dumps(other).encode())
    assert isinstance(p, Problem) and p.state == states.INCOMPATIBLE and p.fatal


def test_decoder_rejects_wrong_hello_schema_and_silence():
    d = AgentDecoder()
    p = d.feed(b'{"hello":"gputop","schema":"gputop/9"}')
    assert isinstance(p, Problem) and p.state == states.INCOMPATIBLE and p.fatal
    d = AgentDecoder()
    results = [d.feed(b"noise") for _ in range(60)]
    assert any(isinstance(r, Problem) and r.fatal for r in results)


@pytest.mark.parametrize("mutate,what", [
    (lambda d: d["devices"][0].update(utilization_gpu_pct="97"), "utilization_gpu_pct"),
    (lambda d: d["devices"][0].update(memory_used_mib=True), "memory_used_mib"),
    (lambda d: d["devices"][0].update(index=None), "index"),
    (lambda d: d["devices"][0]["processes"].append({"pid": "1"}), "pid"),
    (lambda d: d.update(devices={"a": 1}), "devices"),
    (lambda d: d["devices"][0].update(clock_event_reasons=[1]), "clock_event_reasons"),
    (lambda d: d.update(time="now"), "time"),
    (lambda d: d["devices"][0].pop("index"), "index"),
    (lambda d: d.update(hints=[{"device": 0}]), "code"),
    (lambda d: d.pop("host"), "host"),
])
def test_documents_with_wrong_types_are_rejected(mutate, what):
    from gputop.core.model import SchemaError

    doc = sim_doc()
    mutate(doc)
    with pytest.raises(SchemaError, match=what):
        decode_snapshot(doc)


@pytest.mark.parametrize("scenario", ["training", "crowded", "gpu-lost", "dense-16", "idle", "mig",
                                      "mi300x", "max-1550"])
def test_viewer_decoding_equals_the_model_codec(scenario):
    backend = SimBackend(BackendOptions(scenario=scenario))
    backend.open()
    for _ in range(3):
        doc = snapshot_to_json(backend.sample())
        text = json.dumps(doc)
        assert decode_snapshot(json.loads(text)) == snapshot_from_json(json.loads(text))
        clean = clean_document(json.loads(text))
        assert summarize_document(clean) == summarize_snapshot(snapshot_from_json(doc))


def test_strings_are_made_printable_and_capped():
    doc = sim_doc()
    doc["devices"][0]["processes"][0]["command"] = "evil\x1b[2J\x07" + "x" * 10000
    doc["devices"][0]["name"] = "GPU\r\nname"
    snap = decode_snapshot(doc)
    cmd = snap.devices[0].processes[0].command
    assert "\x1b" not in cmd and "\x07" not in cmd and len(cmd) < 4200
    assert snap.devices[0].name.isprintable()


def test_nan_is_not_a_number_json_allows():
    d = AgentDecoder()
    d.feed(b'{"hello":"gputop","schema":"gputop/1"}')
    doc = sim_doc()
    doc["devices"][0]["power_draw_w"] = float("nan")
    p = d.feed(json.dumps(doc).encode())
    assert isinstance(p, Problem) and p.state == states.PROTOCOL_ERROR


# ------------------------------------------------------------------ agentless

def _feed_file(stream, path: Path) -> list:
    out = []
    for line in path.read_bytes().splitlines():
        out += stream.feed(line)
    return out


def test_nvidia_smi_capture_with_header_parses_by_column_name():
    s = NvidiaSmiStream("n", remote.NVIDIA_SMI_FIELDS, clock=lambda: 1.0)
    out = _feed_file(s, FIXTURES / "nvidia-smi" / "csv_all-fields_1xH100-80GB-HBM3_590.48.01_load.csv")
    assert len(out) == 1
    snap = out[0]
    dev = snap.devices[0]
    assert snap.backend == "nvidia-smi" and snap.driver_version == "590.48.01"
    assert dev.name == "NVIDIA H100 80GB HBM3" and dev.vendor == "nvidia"
    assert (dev.memory_total_mib, dev.memory_used_mib, dev.memory_reserved_mib) == \
        (81559, 19818, 479)
    assert dev.power_draw_w == 631.95 and dev.power_limit_w == 700
    assert dev.clock_sm_mhz == 1980 and dev.clock_mem_max_mhz == 2619
    assert dev.fan_pct is None and dev.clock_event_reasons == ()


def test_nvidia_smi_rows_without_count_group_by_index_and_flush():
    s = NvidiaSmiStream("n", remote.NVIDIA_SMI_FIELDS)
    out = _feed_file(s, FIXTURES / "nvidia-smi" /
                     "csv_8xV100-SXM2-32GB_driver-unstated_indexid-58442594871.csv")
    assert out == []  # no count column: the group is complete when the stream goes quiet
    (snap,) = s.flush()
    assert [d.index for d in snap.devices] == list(range(8))
    assert snap.devices[5].memory_total_mib == 32764
    assert snap.devices[6].utilization_gpu_pct == 100


def test_nvidia_smi_noheader_rows_map_by_requested_order():
    fields = ("timestamp", "count", "index", "name", "memory.used", "power.draw")
    s = NvidiaSmiStream("n", fields)
    out = s.feed(b"2026/01/01 00:00:00.000, 2, 0, NVIDIA A100, 100, [N/A]")
    out += s.feed(b"2026/01/01 00:00:00.000, 2, 1, NVIDIA A100, 200, 55.5")
    (snap,) = out
    assert [d.memory_used_mib for d in snap.devices] == [100, 200]
    assert [d.power_draw_w for d in snap.devices] == [None, 55.5]
    bad = s.feed(b"1, 2")
    assert isinstance(bad[0], Problem)


def test_npu_smi_stream_uses_the_npu_parsers():
    s = NpuSmiStream("n", remote.NPU_SMI_END)
    path = FIXTURES / "npu-smi" / "info_910A-xxx-x8_npu-smi-24.1.RC2_processes_warning_huawei-doc.txt"
    out = _feed_file(s, path)
    assert out == []
    (snap,) = s.feed(remote.NPU_SMI_END.encode())
    assert snap.backend == "npu-smi" and len(snap.devices) == 8
    assert snap.devices[0].vendor == "huawei"
    assert any(h.code == "device-unhealthy" for h in snap.hints)
    (bad,) = (s.feed(b"garbage") + s.feed(remote.NPU_SMI_END.encode()))
    assert isinstance(bad, Problem)


# ------------------------------------------------------------------ node state machine

def test_node_falls_back_agent_then_nvidia_smi_then_npu_smi_then_gives_up():
    node = Node(HostSpec("h"), Policy(interval=1, backoff_max=30))
    node.session_started(0)
    assert node.mode == "agent" and node.command() == "gputop agent --interval 1"
    node.on_stderr(b"bash: gputop: command not found\n")
    node.on_exit(127, 1)
    assert node.mode == "nvidia-smi" and node.next_attempt == 1
    node.session_started(1)
    assert node.command().startswith("nvidia-smi ")
    node.on_exit(127, 2)
    assert node.mode == "npu-smi"
    node.session_started(2)
    node.on_exit(127, 3)
    assert node.state == states.NO_GPUTOP and "fallback tried" in node.reason
    assert node.next_attempt >= 3 + 0.8 * 30  # not fixable soon: the longest backoff


def test_node_backoff_grows_and_resets_after_data():
    node = Node(HostSpec("h"), Policy(interval=1, backoff_initial=1, backoff_max=60))
    delays = []
    for t in range(5):
        node.session_started(t * 100)
        node.on_stderr(b"ssh: connect to host h port 22: Connection refused\n")
        node.on_exit(255, t * 100)
        delays.append(node.next_attempt - t * 100)
    assert node.state == states.UNREACHABLE
    assert all(b > a for a, b in zip(delays, delays[1:], strict=False))
    node.session_started(1000)
    node.on_line(b'{"hello":"gputop","schema":"gputop/1"}', 1000)
    node.on_line(json.dumps(sim_doc()).encode(), 1000)
    assert node.state == states.OK
    node.on_exit(255, 1001)
    assert node.next_attempt - 1001 <= 1.2  # back to the first step


def test_nvidia_smi_invalid_field_retries_with_basic_fields():
    node = Node(HostSpec("h"), Policy())
    node.mode = "nvidia-smi"
    node.session_started(0)
    node.on_line(b'Field "memory.reserved" is not a valid field to query.', 0)
    node.on_exit(2, 1)
    assert node.state == states.CONNECTING and node.next_attempt == 1
    assert "memory.reserved" not in node.command()


# ------------------------------------------------------------------ aggregation

def _status(host, state="ok", scenario="training", seq=1):
    snap = None
    if scenario:
        backend = SimBackend(BackendOptions(scenario=scenario))
        backend.open()
        snap = backend.sample()
    return NodeStatus(host, state, "agent", "", snap, 0.0 if snap else None, seq=seq)


def test_rows_sort_filter_and_users():
    statuses = [_status("a", scenario="training"), _status("beta", scenario="idle"),
                _status("c", state="unreachable", scenario=None)]
    rows = [node_row(s, now=1.0) for s in statuses]
    a, b, c = rows
    assert a.gpus == 8 and a.util_pct > 50 and b.util_pct == 0
    assert c.gpus is None and c.util_pct is None  # no data is N/A, not 0
    # agents on the simulator are marked in their row (#27); one on a device would not be
    assert a.mode == "agent/sim" and c.mode == "agent"
    assert a.mem_total_mib == sum(d.memory_total_mib for d in statuses[0].snapshot.devices)
    assert [r.host for r in sort_rows(rows, "util", reverse=True)] == ["a", "beta", "c"]
    assert [r.host for r in sort_rows(rows, "util")] == ["beta", "a", "c"]  # None last either way
    assert [r.host for r in sort_rows(rows, "state")] == ["c", "a", "beta"]
    assert [r.host for r in filter_rows(rows, "state:unreachable")] == ["c"]
    assert [r.host for r in filter_rows(rows, "BETA")] == ["beta"]
    users = users_view(statuses)
    assert users and users[0].gpus >= users[-1].gpus
    total_gpus = sum(1 for d in statuses[0].snapshot.devices if d.processes)
    assert sum(u.gpus for u in users) >= total_gpus
    assert all(set(u.nodes) <= {"a", "beta"} for u in users)


def test_the_decoder_takes_lines_with_alerts_and_lines_from_before_them():
    """`gputop agent --alerts` adds an ``alerts`` list beside the snapshot: this viewer (and an
    older one, which knows neither it nor ``xid_events``) skips it; a line of an agent older
    than Xid events decodes too."""
    alert = {"rule": "xid", "key": "xid/n/gpu1/xid79", "state": "firing",
             "severity": "critical", "at": 1.0, "summary": "GPU 1 Xid 79", "node": "n",
             "gpu": 1, "since": 1.0, "labels": {"xid": "79"}}
    with_alerts = dict(sim_doc(), xid_events=[], alerts=[alert])
    old = sim_doc()
    for dev in old["devices"]:
        dev.pop("xid_events", None)
    for doc in (with_alerts, old):
        d = AgentDecoder()
        d.feed(b'{"hello":"gputop","version":"0.1.0","schema":"gputop/1","backend":"sim",'
               b'"host":"n"}')
        checked = d.feed(json.dumps(doc).encode())
        assert isinstance(checked, Checked), checked
        assert "alerts" not in checked.doc
        assert len(build_snapshot(checked.doc).devices) == 8
