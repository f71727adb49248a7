"""Attribution on real kernel objects: real processes in cgroups named as Docker, Kubernetes and
Slurm name them, in a fresh PID namespace, with SLURM_JOB_ID in their environment; the fake
NVML reports their host PIDs; ``gputop snapshot --json --backend nvml`` must name their owners.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from gputop.core.model import Container, Job
from gputop.host import pidns
from gputop.host.attribution import Attribution, Places
from tests.support.kernel_lab import (
    CRI_ID,
    DOCKER_ID,
    POD_UID,
    namespaced_child,
    step_child,
)
from tests.support.paths import ROOT


def snapshot_json(gpus: str, *, wrap: list[str] = (), env=None) -> dict:
    """Run ``gputop snapshot --json --backend nvml`` in a subprocess whose ``pynvml`` is the
    project's fake, built from the Python expression ``gpus``."""
    code = (
        "import sys; from tests.support.fake_pynvml import FakeNvml, FakeProcess, h100;"
        f"sys.modules['pynvml'] = FakeNvml({gpus});"
        "from gputop.commands.main import main;"
        "sys.exit(main(['snapshot', '--json', '--backend', 'nvml']))"
    )
    out = subprocess.run([*wrap, sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def processes(doc: dict) -> dict[int, dict]:
    return {p["pid"]: p for d in doc["devices"] for p in d["processes"]}


def test_snapshot_names_container_pod_job_and_namespace_pid(lab):
    docker = lab.spawn()
    lab.place(docker.pid, f"docker/{DOCKER_ID}")
    pod = lab.spawn()
    lab.place(pod.pid, "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
              f"{POD_UID.replace('-', '_')}.slice/cri-containerd-{CRI_ID}.scope")
    slurm_v1 = lab.spawn()
    lab.place(slurm_v1.pid, "slurm/uid_0/job_4242/step_0/task_0")
    slurm_v2 = lab.spawn()
    lab.place(slurm_v2.pid, "system.slice/slurmstepd.scope/job_4343/step_batch/user/task_0")
    env_job = step_child(lab, {**os.environ, "SLURM_JOB_ID": "5151"})
    ns_host, ns_pid = namespaced_child(lab)

    pids = [docker.pid, pod.pid, slurm_v1.pid, slurm_v2.pid, env_job, ns_host]
    gpus = "[" + ", ".join(f"h100({i}, [FakeProcess(pid={pid}, used_mib=1000.0 + {i})])"
                           for i, pid in enumerate(pids)) + "]"
    got = processes(snapshot_json(gpus))

    assert got[docker.pid]["container"] == {
        "runtime": "docker", "id": DOCKER_ID, "name": None, "pod": None, "pod_namespace": None,
        "pod_uid": None}
    assert got[pod.pid]["container"]["id"] == CRI_ID
    assert got[pod.pid]["container"]["runtime"] == "containerd"
    assert got[pod.pid]["container"]["pod_uid"] == POD_UID
    assert got[slurm_v1.pid]["job"] == {"scheduler": "slurm", "id": "4242", "step": "0"}
    assert got[slurm_v2.pid]["job"] == {"scheduler": "slurm", "id": "4343", "step": "batch"}
    assert got[env_job]["job"] == {"scheduler": "slurm", "id": "5151", "step": None}
    assert got[ns_host]["namespace_pid"] == ns_pid == 1
    for pid in pids:
        assert got[pid]["user"] == "root" and got[pid]["outside_pid_namespace"] is False
    # nothing is made up for a plain host process
    assert got[docker.pid]["job"] is None and got[docker.pid]["namespace_pid"] is None


def test_names_from_docker_config_and_kubelet_logs(lab, tmp_path):
    """Names come from the files the runtimes keep on the node, in their formats."""
    docker = lab.spawn()
    lab.place(docker.pid, f"system.slice/docker-{DOCKER_ID}.scope")
    pod = lab.spawn()
    lab.place(pod.pid, f"kubepods/burstable/pod{POD_UID}/{CRI_ID}")
    (tmp_path / "docker/containers" / DOCKER_ID).mkdir(parents=True)
    (tmp_path / "docker/containers" / DOCKER_ID / "config.v2.json").write_text(
        json.dumps({"ID": DOCKER_ID, "Name": "/llama-finetune"}))
    (tmp_path / "pods" / f"research_trainer-0_{POD_UID}").mkdir(parents=True)
    (tmp_path / "containers").mkdir()
    (tmp_path / "containers" / f"trainer-0_research_pytorch-{CRI_ID}.log").touch()
    attribution = Attribution(Places(docker=str(tmp_path / "docker"), pod_logs=str(tmp_path / "pods"),
                                     container_logs=str(tmp_path / "containers")))

    assert attribution.owner(docker.pid).container == Container(
        runtime="docker", id=DOCKER_ID, name="llama-finetune")
    assert attribution.owner(pod.pid).container == Container(
        runtime=None, id=CRI_ID, name="pytorch", pod="trainer-0", pod_namespace="research",
        pod_uid=POD_UID)
    assert attribution.owner(os.getpid()).container is None


def test_a_cgroup_job_wins_over_the_environment(lab):
    """SLURM_JOB_ID is the user's to change; the cgroup is not."""
    proc = lab.spawn(env={**os.environ, "SLURM_JOB_ID": "1"})
    lab.place(proc.pid, "slurm/uid_0/job_77/step_3")
    assert Attribution().owner(proc.pid).job == Job("slurm", "77", "3")


def test_a_job_id_inherited_outside_any_job_step_is_not_believed(lab):
    """The shell of an ``salloc`` on a login node, or a variable exported by hand, carries
    SLURM_JOB_ID without running in the job: only a process started by a Slurm step daemon
    (slurmstepd) is attributed by its environment."""
    loose = lab.spawn(env={**os.environ, "SLURM_JOB_ID": "5151"})
    stepped = step_child(lab, {**os.environ, "SLURM_JOB_ID": "5151"})
    attribution = Attribution()
    assert attribution.owner(loose.pid).job is None
    assert attribution.owner(stepped).job == Job("slurm", "5151", None)
    # In a PID namespace whose /proc ends every chain at its own init the step daemon may be
    # out of sight: there the environment is read as before.
    inside = Attribution(pid_view=pidns.PidView(in_host_namespace=False, proc_is_host=False))
    assert inside.owner(loose.pid).job == Job("slurm", "5151", None)


def test_inside_a_fresh_pid_namespace_every_nvml_process_is_listed(lab):
    """Run in its own PID namespace (its own /proc), gputop cannot see the host PIDs NVML
    reports: each stays listed with its memory, marked outside, with no one else's facts."""
    a, b = lab.spawn(), lab.spawn()
    gpus = (f"[h100(0, [FakeProcess(pid={a.pid}, used_mib=12000.0), "
            f"FakeProcess(pid={b.pid}, used_mib=600.0)]), h100(1, [FakeProcess(pid=1, used_mib=5.0)])]")
    doc = snapshot_json(gpus, wrap=["unshare", "--pid", "--fork", "--mount-proc"])
    rows = [(d["index"], p["pid"], p["gpu_memory_mib"], p["outside_pid_namespace"], p["user"],
             p["command"]) for d in doc["devices"] for p in d["processes"]]
    # host PID 1 (init) is not this namespace's PID 1 (the snapshot's own python): never its facts
    assert sorted(rows) == sorted([(0, a.pid, 12000.0, True, None, None),
                                   (0, b.pid, 600.0, True, None, None),
                                   (1, 1, 5.0, True, None, None)])


def test_the_user_is_read_from_the_status_file_once_for_both():
    """The status file names the user (Uid) as well as the namespace PID: read once for both,
    the name as psutil and ps give it (the uid's number where the passwd database has none)."""
    import pwd

    from gputop.host.processes import HostProcesses

    nobody_uid = next(u for u in range(54321, 60000) if not _has_passwd_entry(u, pwd))
    mine = subprocess.Popen(["sleep", "60"])
    theirs = subprocess.Popen(["sleep", "60"], user=nobody_uid)
    try:
        host = HostProcesses()
        assert host.lookup(mine.pid).user == pwd.getpwuid(os.getuid()).pw_name
        assert host.lookup(theirs.pid).user == str(nobody_uid)
    finally:
        for p in (mine, theirs):
            p.kill()
            p.wait()


def _has_passwd_entry(uid: int, pwd) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def test_processes_sharing_a_cgroup_are_parsed_once(lab, monkeypatch):
    """A container's or a job's processes (and all the host's) share one cgroup file text: it
    is parsed, and its container named, once; a process in another cgroup still gets its own."""
    from gputop.host import attribution as module

    parsed = []
    real_parse = module.parse_container
    monkeypatch.setattr(module, "parse_container", lambda text: parsed.append(text) or
                        real_parse(text))
    other_id = DOCKER_ID[::-1]
    a, b, c = lab.spawn(), lab.spawn(), lab.spawn()
    lab.place(a.pid, f"docker/{DOCKER_ID}")
    lab.place(b.pid, f"docker/{DOCKER_ID}")
    lab.place(c.pid, f"docker/{other_id}")
    attribution = Attribution()

    ids = [attribution.owner(p.pid).container.id for p in (a, b, c)]

    assert ids == [DOCKER_ID, DOCKER_ID, other_id]
    assert len(parsed) == 2


def test_the_parsed_cgroups_kept_are_bounded(lab, monkeypatch):
    """A node that starts containers for months must not grow the cache for months."""
    from gputop.host import attribution as module

    monkeypatch.setattr(module, "MAX_CACHED", 3)
    attribution = Attribution()
    procs = [lab.spawn() for _ in range(7)]
    for k, proc in enumerate(procs):
        lab.place(proc.pid, f"docker/{k:064x}")
        assert attribution.owner(proc.pid).container.id == f"{k:064x}"
        assert len(attribution._by_cgroup) <= 3
    # what was dropped is read again, not lost
    assert attribution.owner(procs[0].pid).container.id == f"{0:064x}"


def test_a_large_environment_is_read_whole():
    """A job's environment can pass 64 KiB (module systems, conda): the read goes on past a
    chunk until the kernel has given all of it, so a SLURM_JOB_ID at its end is found."""
    from gputop.host.attribution import READ_CHUNK, _read
    from gputop.host.owners import parse_slurm_environ

    env = {f"PAD_{k}": "x" * 1000 for k in range(3 * READ_CHUNK // 1000)}
    env["SLURM_JOB_ID"] = "8080"
    proc = subprocess.Popen(["sleep", "60"], env=env)
    try:
        deadline = time.monotonic() + 10
        # Popen returns once exec has begun; the new environment is in place a moment later
        while not (data := _read(f"/proc/{proc.pid}/environ")) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(data) > 2 * READ_CHUNK
        assert data == b"".join(f"{k}={v}\0".encode() for k, v in env.items())
        assert parse_slurm_environ(data) == Job("slurm", "8080", None)
        assert len(_read(f"/proc/{proc.pid}/environ", limit=READ_CHUNK + 5)) == READ_CHUNK + 5
    finally:
        proc.kill()
        proc.wait()
