"""The cluster view against a real OpenSSH server on loopback (see conftest.py's lab)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gputop.cluster import states
from gputop.cluster.hosts import HostSpec
from gputop.cluster.node import Policy
from gputop.cluster.remote import ssh_argv
from gputop.cluster.ssh_options import shown
from gputop.cluster.transport import Cluster
from tests.support import strict_json
from tests.support.cluster_lab import INTERVAL, Lab
from tests.support.paths import ROOT
from tests.support.ssh_harness import login_name, toml_hosts, write_bare_ssh_config


def make_cluster(lab: Lab, names: list[str], **policy) -> Cluster:
    specs = [HostSpec(n, lab.command(n)) for n in names]
    defaults = dict(interval=INTERVAL, connect_timeout=3, backoff_initial=0.2, backoff_max=1.0,
                    answer_timeout=15)
    defaults.update(policy)
    return Cluster(specs, Policy(**defaults), ssh_config=str(lab.ssh_config))


def wait_for(cluster: Cluster, cond, timeout: float = 15.0) -> dict:
    ok = cluster.wait(lambda ss: cond({s.host: s for s in ss}), timeout)
    by_host = {s.host: s for s in cluster.statuses()}
    assert ok, {h: (s.state, s.reason) for h, s in by_host.items()}
    return by_host


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gputop", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def test_once_json_three_nodes_ok_and_a_closed_port_unreachable(lab: Lab, tmp_path: Path):
    hosts = toml_hosts(tmp_path / "hosts.toml",
                       [(n, lab.command(n)) for n in ("node-a", "node-b", "node-c", "closed")])
    start = time.monotonic()
    proc = run_cli("cluster", "--hosts", str(hosts), "--ssh-config", str(lab.ssh_config),
                   "--once", "--json", "--connect-timeout", "5")
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr  # one node is not ok
    nodes = {n["host"]: n for n in json.loads(proc.stdout)["nodes"]}
    assert list(nodes) == ["node-a", "node-b", "node-c", "closed"]
    for name, count in (("node-a", 8), ("node-b", 8), ("node-c", 8)):
        node = nodes[name]
        assert node["state"] == "ok" and node["mode"] == "agent", node["reason"]
        assert node["snapshot"]["schema"] == "gputop/1"
        assert len(node["snapshot"]["devices"]) == count
        assert node["snapshot"]["devices"][0]["memory_total_mib"] > 0
    assert nodes["closed"]["state"] == "unreachable"
    assert "Connection refused" in nodes["closed"]["reason"]
    assert nodes["closed"]["snapshot"] is None
    assert elapsed < 5 + 10  # within the connect timeout (plus the three agents' start)


def test_three_nodes_stream_and_a_killed_sshd_comes_back(lab: Lab):
    cluster = make_cluster(lab, ["node-a", "node-b", "node-c", "node-k"])
    with cluster:
        wait_for(cluster, lambda s: all(x.state == "ok" for x in s.values()))
        # Streaming: every node delivers new samples, not one.
        before = {s.host: s.seq for s in cluster.statuses()}
        after = wait_for(cluster, lambda s: all(s[h].seq >= before[h] + 2 for h in before))
        assert after["node-a"].snapshot.devices[0].utilization_gpu_pct > 50  # training
        assert after["node-b"].snapshot.devices[0].utilization_gpu_pct == 0  # idle
        assert after["node-a"].hello.backend == "sim"

        lab.killable.kill()
        killed_at = time.monotonic()
        down = wait_for(cluster, lambda s: s["node-k"].state == "unreachable", 10)
        assert time.monotonic() - killed_at < 8
        # The others continue meanwhile.
        seqs = {h: down[h].seq for h in ("node-a", "node-b", "node-c")}
        wait_for(cluster, lambda s: all(s[h].seq > seqs[h] and s[h].state == "ok"
                                        for h in seqs))
        # Reconnects fail while sshd is down, then succeed when it is back.
        lab.killable.start()
        back = wait_for(cluster, lambda s: s["node-k"].state == "ok", 20)
        assert back["node-k"].attempts >= 2
        assert back["node-k"].snapshot.devices


def test_wrong_key_is_auth_failed(lab: Lab):
    with make_cluster(lab, ["wrongkey"], reconnect=False) as cluster:
        s = wait_for(cluster, lambda s: s["wrongkey"].done)["wrongkey"]
    assert s.state == states.AUTH_FAILED
    assert "Permission denied" in s.reason


def test_changed_host_key_is_rejected_and_not_learned(lab: Lab):
    known_before = lab.changed_known_hosts.read_bytes()
    with make_cluster(lab, ["changedkey"], reconnect=False) as cluster:
        s = wait_for(cluster, lambda s: s["changedkey"].done)["changedkey"]
    assert s.state == states.HOST_KEY_REJECTED
    assert "changed" in s.reason
    assert s.snapshot is None
    assert lab.changed_known_hosts.read_bytes() == known_before


def test_remote_without_gputop_falls_back_to_nvidia_smi_or_npu_smi(lab: Lab):
    with make_cluster(lab, ["nogputop", "npunode", "nothing", "node-b"]) as cluster:
        s = wait_for(cluster, lambda s: s["nogputop"].state == "ok" and
                     s["npunode"].state == "ok" and s["nothing"].state == "no-gputop", 25)
    node = s["nogputop"]
    assert node.mode == "nvidia-smi"
    assert "gputop not found" in node.reason
    dev = node.snapshot.devices[0]
    # Values from the real H100 capture the fake nvidia-smi prints.
    assert dev.name == "NVIDIA H100 80GB HBM3"
    assert dev.memory_total_mib == 81559 and dev.memory_used_mib == 19818
    assert dev.power_draw_w == 631.95 and dev.utilization_gpu_pct == 100
    assert dev.fan_pct is None  # [N/A] stays unknown
    assert node.snapshot.driver_version == "590.48.01"
    npu = s["npunode"]
    assert npu.mode == "npu-smi" and "agentless via npu-smi" in npu.reason
    assert [d.vendor for d in npu.snapshot.devices] == ["huawei", "huawei"]
    assert npu.snapshot.driver_version == "23.0.2.1"
    assert s["nothing"].mode == "agent"
    assert "fallback tried" in s["nothing"].reason
    assert s["node-b"].state == "ok"


def test_garbage_schema_and_bad_types_are_marked_not_fatal_to_others(lab: Lab):
    names = ["liar-garbage", "liar-schema", "liar-badtypes", "liar-noise", "node-b"]
    with make_cluster(lab, names) as cluster:
        s = wait_for(cluster, lambda s: s["liar-garbage"].state == "protocol-error" and
                     s["liar-schema"].state == "incompatible" and
                     s["liar-badtypes"].state == "protocol-error" and
                     s["liar-noise"].state == "ok" and s["node-b"].state == "ok")
    assert "invalid JSON" in s["liar-garbage"].reason
    assert s["liar-garbage"].rejected >= 1
    assert "gputop/99" in s["liar-schema"].reason
    assert "utilization_gpu_pct" in s["liar-badtypes"].reason
    assert s["liar-badtypes"].snapshot is None
    assert all(c.isprintable() for c in s["liar-garbage"].reason)


def test_a_100_mb_line_is_discarded_without_buffering_it(lab: Lab):
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with make_cluster(lab, ["liar-huge", "node-b"]) as cluster:
        wait_for(cluster, lambda s: s["node-b"].state == "ok")
        seq_b = cluster.status("node-b").seq
        s = wait_for(cluster, lambda s: s["liar-huge"].rejected >= 1 and
                     s["liar-huge"].state == "ok", 30)
        # node-b keeps streaming: the 100 MB line cost it nothing.
        wait_for(cluster, lambda s: s["node-b"].seq >= seq_b + 2 and s["node-b"].state == "ok",
                 5)
    growth_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
    assert growth_mib < 40, f"peak RSS grew {growth_mib:.0f} MiB"
    assert s["liar-huge"].snapshot.devices


def test_a_node_that_goes_quiet_turns_stale_then_is_reconnected(lab: Lab):
    with make_cluster(lab, ["liar-hang", "node-b"], stale_after=1.0,
                      restart_after=3.0) as cluster:
        wait_for(cluster, lambda s: s["liar-hang"].state == "ok")
        s = wait_for(cluster, lambda s: s["liar-hang"].state == "stale", 5)
        assert "no data for" in s["liar-hang"].reason
        assert s["liar-hang"].snapshot is not None  # the last data stays, with its age
        assert s["node-b"].state == "ok"
        wait_for(cluster, lambda s: s["liar-hang"].attempts >= 2, 10)


def test_a_silent_host_times_out_without_stalling_others(lab: Lab):
    with make_cluster(lab, ["blackhole", "node-b"], connect_timeout=2) as cluster:
        s = wait_for(cluster, lambda s: s["node-b"].state == "ok")
        assert s["blackhole"].state == "connecting"
        s = wait_for(cluster, lambda s: s["blackhole"].state == "unreachable", 10)
    assert "timed out" in s["blackhole"].reason.lower()


def test_injection_host_name_creates_nothing(lab: Lab, tmp_path: Path):
    marker = Path(f"/tmp/gputop-pwned-{uuid.uuid4().hex}")
    evil = f"-oProxyCommand=touch {marker}"
    proc = run_cli("cluster", "--ssh-config", str(lab.ssh_config), "--once", "--json", "--",
                   evil)
    assert proc.returncode == 2
    assert proc.stderr.startswith("gputop: ") and proc.stderr.count("\n") == 1
    assert "starts with '-'" in proc.stderr and proc.stdout == ""
    hosts = toml_hosts(tmp_path / "hosts.toml", [("node-a", None), (evil, None)])
    proc = run_cli("cluster", "--hosts", str(hosts), "--once", "--json")
    assert proc.returncode == 2 and "refusing host name" in proc.stderr
    for bad in (f"node;touch {marker}", f"$(touch {marker})", "a b"):
        proc = run_cli("cluster", "--once", "--", bad)
        assert proc.returncode == 2 and "no host name has" in proc.stderr, proc.stderr
    # Defence in depth: had a name slipped through, `--` makes ssh read it as a destination.
    argv = ssh_argv(HostSpec("node-a"), "true", ssh_config=str(lab.ssh_config))
    argv[argv.index("--") + 1] = evil
    subprocess.run(argv, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    assert not marker.exists()


def _direct_args(lab: Lab) -> list[str]:
    """What reaches the lab's sshd with the bare config: port, key and login from ssh_args."""
    return ["-p", str(lab.main.port), "-i", str(lab.identity), "-l", login_name()]


def test_hosts_file_ssh_args_that_run_or_write_something_are_refused(lab: Lab, tmp_path: Path):
    bare = write_bare_ssh_config(tmp_path / "bare_config", lab.known_hosts)
    marker = tmp_path / "marker"
    evil_config = tmp_path / "evil_config"
    evil_config.write_text(f"Host *\n  ProxyCommand touch {marker}\n")
    log = tmp_path / "ssh.log"
    known = tmp_path / "new_known_hosts"
    cases = [
        # A long path is cut in the message, as gputop shows every argument (xdist's folders
        # make this one longer than the cut).
        ([f"-F{evil_config}"], shown(f"-F{evil_config}")),
        (["-F", str(evil_config)], "'-F'"),
        ([f"-E{log}"], shown(f"-E{log}")),
        ([f"-oProxyCommand=touch {marker}"], "-oProxyCommand"),
        (["-o", f"LocalCommand=touch {marker}", "-o", "PermitLocalCommand=yes"],
         "-o LocalCommand"),
        ([f"-oKnownHostsCommand=/usr/bin/touch {marker}"], "-oKnownHostsCommand"),
        (["-o", "StrictHostKeyChecking=accept-new", "-o", f"UserKnownHostsFile={known}"],
         "StrictHostKeyChecking=accept-new"),
        ([f"-oUserKnownHostsFile={known}"], "-oUserKnownHostsFile"),
    ]
    for evil, named in cases:
        hosts = toml_hosts(tmp_path / "hosts.toml",
                           [("127.0.0.1", lab.command("node-b"), _direct_args(lab) + evil)])
        proc = run_cli("cluster", "--hosts", str(hosts), "--ssh-config", str(bare), "--once",
                       "--json", "--connect-timeout", "3", "--timeout", "15")
        assert proc.returncode == 2, (evil, proc.stdout, proc.stderr)
        assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"gputop: {hosts}: host #1 (127.0.0.1) ssh_args: refusing")
        assert named in proc.stderr, proc.stderr
        for path in (marker, log, known):
            assert not path.exists(), (evil, path)


def test_hosts_file_allowed_ssh_args_reach_the_server(lab: Lab, tmp_path: Path):
    bare = write_bare_ssh_config(tmp_path / "bare_config", lab.known_hosts)
    port, key, user = str(lab.main.port), str(lab.identity), login_name()
    hosts = toml_hosts(tmp_path / "hosts.toml", [
        ("127.0.0.1", lab.command("node-b"), _direct_args(lab) + ["-o", "ConnectTimeout=5"]),
        (f"{user}@127.0.0.1", lab.command("node-b"),
         [f"-p{port}", f"-i{key}", "-oConnectTimeout=5", "-o", "ServerAliveInterval 5",
          "-4", "-C", "-o", "StrictHostKeyChecking=yes", "-o IdentitiesOnly=yes"]),
        ("ssh://127.0.0.1", lab.command("node-b"),
         ["-o", f"Port={port}", "-o", f"IdentityFile={key}", "-o", f"user={user}"]),
    ])
    proc = run_cli("cluster", "--hosts", str(hosts), "--ssh-config", str(bare), "--once",
                   "--json", "--connect-timeout", "5")
    assert proc.returncode == 0, proc.stderr
    nodes = json.loads(proc.stdout)["nodes"]
    assert [(n["host"], n["state"], n["mode"]) for n in nodes] == [
        ("127.0.0.1", "ok", "agent"), (f"{user}@127.0.0.1", "ok", "agent"),
        ("ssh://127.0.0.1", "ok", "agent")]
    # Without them the bare config reaches nothing: the options did the work.
    hosts = toml_hosts(tmp_path / "hosts.toml", [("127.0.0.1", lab.command("node-b"))])
    proc = run_cli("cluster", "--hosts", str(hosts), "--ssh-config", str(bare), "--once",
                   "--json", "--connect-timeout", "3")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["nodes"][0]["state"] == "unreachable"


def test_cli_hosts_on_the_command_line_with_remote_command_and_text_output(lab: Lab):
    proc = run_cli("cluster", "node-b", "--ssh-config", str(lab.ssh_config),
                   "--remote-command", lab.command("node-b"), "--once")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["HOST", "STATE", "MODE"]
    # the lab's agents read the simulator, and the table says so (#27)
    assert lines[1].split()[:4] == ["node-b", "ok", "agent/sim", "8"]
    assert lines[-1].startswith("1/1 nodes ok, 8 GPUs")


def test_cli_usage_errors_are_one_line():
    for args, what in ((["cluster", "--once"], "no hosts"),
                       (["cluster", "a", "--json"], "--json needs --once"),
                       (["cluster", "a", "--once", "--hosts", "/nonexistent.toml"], "not found"),
                       (["cluster", "a", "--once", "--remote-command", ""], "non-empty"),
                       (["cluster", "a", "a", "--once"], "listed twice"),
                       (["cluster", "a", "--once", "--timeout", "0"], "--timeout"),
                       (["cluster", "a", "--once", "--max-opening", "0"], "--max-opening")):
        proc = run_cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert what in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_nodes_lying_with_numbers_are_protocol_errors_and_the_others_go_on(lab: Lab,
                                                                           tmp_path: Path):
    """1e400, a 400-digit integer and "saturation": null over real ssh: each liar is
    protocol-error naming the key, the honest node stays ok, `--once --json` is strict JSON and
    `--once` prints its table (both crashed: OverflowError, AttributeError, Infinity)."""
    names = ["liar-overflow", "liar-bignum", "liar-nullsat", "node-b"]
    hosts = toml_hosts(tmp_path / "hosts.toml", [(n, lab.command(n)) for n in names])
    common = ("cluster", "--hosts", str(hosts), "--ssh-config", str(lab.ssh_config), "--once",
              "--connect-timeout", "5")
    proc = run_cli(*common, "--json")
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    nodes = {n["host"]: n for n in strict_json.loads(proc.stdout)["nodes"]}
    assert nodes["node-b"]["state"] == "ok"
    for name, key in (("liar-overflow", "devices[1].power_draw_w"),
                      ("liar-bignum", "devices[1].memory_used_mib"),
                      ("liar-nullsat", "devices[1].saturation is null")):
        assert nodes[name]["state"] == "protocol-error", nodes[name]
        assert key in nodes[name]["reason"] and nodes[name]["snapshot"] is None
    proc = run_cli(*common)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert proc.stdout.count("protocol-error") == 3 and "1/4 nodes ok" in proc.stdout


def test_sigterm_during_once_leaves_no_ssh_behind(lab: Lab, tmp_path: Path):
    import signal

    import psutil

    hosts = toml_hosts(tmp_path / "hosts.toml", [("blackhole", None)])
    proc = subprocess.Popen([sys.executable, "-m", "gputop", "cluster", "--hosts", str(hosts),
                             "--ssh-config", str(lab.ssh_config), "--once",
                             "--connect-timeout", "60"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        children = []
        while not children and time.monotonic() < deadline:
            children = [c for c in psutil.Process(proc.pid).children() if c.name() == "ssh"]
            time.sleep(0.05)
        assert children, "ssh did not start"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 128 + signal.SIGTERM
        gone, alive = psutil.wait_procs(children, timeout=3)
        for p in alive:
            p.kill()
        assert not alive, "ssh was left running"
    finally:
        proc.kill()
        proc.wait()


def _remote(marker: str, client: int, timeout: float = 15.0):
    """The remote command's process: it holds ``marker``, and is not the ssh client."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in psutil.process_iter(["cmdline", "name"]):
            if p.pid != client and p.info["name"] != "ssh" and \
                    marker in " ".join(p.info["cmdline"] or ()):
                return p
        time.sleep(0.05)
    raise AssertionError(f"no remote process with {marker!r}")


@pytest.mark.parametrize("what", ["agent", "nvidia-smi loop"])
def test_a_dropped_ssh_session_leaves_nothing_running_on_the_remote(lab: Lab, what: str):
    """The SSH session that runs a node's agent (or agentless nvidia-smi loop) drops: the
    remote command ends with it. The fake nvidia-smi loop used to outlive its session (parent
    1) at the end of every test run: a real `nvidia-smi -l` dies on its next write, and so must
    the fake."""
    import signal

    import psutil

    from tests.support.ssh_harness import agent_command

    seed = str(uuid.uuid4().int % 10**9)
    if what == "agent":
        alias, command, marker = "node-b", agent_command("idle", INTERVAL, seed=int(seed)), seed
    else:
        alias, marker = "nogputop", f"--marker-{seed}"
        command = f"nvidia-smi --query-gpu=index --format=csv -lms 500 {marker}"
    client = subprocess.Popen(["ssh", "-F", str(lab.ssh_config), "-T", alias, "--", command],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        assert client.stdout is not None and client.stdout.readline()  # it runs and speaks
        remote = _remote(marker, client.pid)
        client.send_signal(signal.SIGKILL)  # the network drops: no EOF is sent, no goodbye
        client.wait(5)
        try:
            remote.wait(5)
        except psutil.TimeoutExpired:
            remote.kill()
            raise AssertionError(f"the remote {what} outlived its SSH session") from None
    finally:
        client.kill()
        client.wait()


VENDOR_KEYS = ("vendor", "name", "pci_bus_id", "utilization_gpu_pct", "memory_used_mib",
               "memory_total_mib", "memory_gtt_used_mib", "memory_gtt_total_mib",
               "power_draw_w", "power_limit_w", "temperature_c", "temperature_hotspot_c",
               "temperature_memory_c", "clock_sm_mhz")


def test_amd_and_intel_nodes_come_whole_over_ssh(lab: Lab, tmp_path: Path):
    """An AMD node (the agent on a captured amdgpu tree, and the simulator's MI300X) and an Intel
    one (the simulator's Max 1550) reach the cluster view as their own snapshots have them: the
    vendor and the figures only they have (GTT, the junction temperature) included."""
    from tests.support.amd import mount
    from tests.support.ssh_harness import gputop_command

    root = mount(tmp_path / "amd", "sysfs_Phoenix-APU-RDNA3_amdgpu_lact-snapshot_gpu_metrics_kfd")
    backends = {"node-a": ("--backend", "amd", "--sysfs-root", str(root)),
                "node-b": ("--backend", "sim", "--scenario", "mi300x", "--seed", "1"),
                "node-c": ("--backend", "sim", "--scenario", "max-1550", "--seed", "1")}
    hosts = toml_hosts(tmp_path / "hosts.toml", [
        (name, gputop_command("agent", *args, "--interval", "1"))
        for name, args in backends.items()])
    proc = run_cli("cluster", "--hosts", str(hosts), "--ssh-config", str(lab.ssh_config),
                   "--once", "--json")
    assert proc.returncode == 0, proc.stderr
    nodes = {n["host"]: n for n in json.loads(proc.stdout)["nodes"]}
    vendors = {}
    for name, args in backends.items():
        assert nodes[name]["state"] == "ok" and nodes[name]["mode"] == "agent"
        want = json.loads(run_cli("snapshot", "--json", *args).stdout)
        got = nodes[name]["snapshot"]
        assert len(got["devices"]) == len(want["devices"]) > 0
        for mine, theirs in zip(got["devices"], want["devices"]):
            assert {k: mine[k] for k in VENDOR_KEYS} == {k: theirs[k] for k in VENDOR_KEYS}
        vendors[name] = got["devices"][0]
    apu = vendors["node-a"]
    assert apu["vendor"] == "amd" and apu["memory_gtt_total_mib"] > 0
    assert vendors["node-b"]["vendor"] == "amd" and vendors["node-b"]["temperature_hotspot_c"]
    assert vendors["node-c"]["vendor"] == "intel"
