"""The cgroup, NSpid and environ parsers on real captured lines (tests/fixtures/cgroup)."""


import pytest

from gputop.core.model import Container, Job
from gputop.host.owners import (
    parse_container,
    parse_nspid,
    parse_slurm_cgroup,
    parse_slurm_environ,
)
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "cgroup"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize("name, expected", [
    ("docker-cgroupfs-v1.txt", Container(
        runtime="docker", id="a2ffe0e97ac22657a2a023ad628e9df837c38a03b1ebc904d3f6d644eb1a1a81")),
    ("docker-systemd-v1.txt", Container(
        runtime="docker", id="b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26")),
    ("docker-systemd-v2.txt", Container(
        runtime="docker", id="b508e2673897c4f521d858f56dab18e31ddbfc1f83300fb9793c8a4052af8f05")),
    ("k8s-containerd-systemd-v1.txt", Container(
        runtime="containerd", id="ee4b20e90ac7f42a10bd004d05646b13d8ab5e2c5e7cbc01abf8006bac016459",
        pod_uid="0125ec2f-b64a-4868-8f5b-94b56cbab864")),
    ("k8s-containerd-systemd-v1-burstable.txt", Container(
        runtime="containerd", id="0f99ad5f45163ed14ab8eaf92ed34bb4a631d007f8755a7d79be614bcb0df0ef",
        pod_uid="ff49d0be-16b7-4a49-bb9e-8ec1f1f4e27f")),
    ("k8s-crio-systemd-v1.txt", Container(
        runtime="cri-o", id="5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c",
        pod_uid="a5c1f8d5-1919-434d-add7-4afaafdaef89")),
    ("k8s-cgroupfs-v1.txt", Container(
        runtime=None, id="d28e0087cf8f3f0429f755d60b0de415b20fcf76736ded7bab6e30e7b739ee36",
        pod_uid="9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3")),
    ("podman-systemd-v2.txt", Container(
        runtime="podman", id="cf21d19260ace8544fe8b769fc2638bf2c0873dfbfff0b6253f0569b26a1d5eb")),
    ("lxc-payload.txt", Container(runtime="lxc", id="buster", name="buster")),
    ("host-v1.txt", None),
    ("slurm-v1.txt", None),
    ("slurm-v2.txt", None),
])
def test_container_from_real_cgroup_files(name, expected):
    assert parse_container(fixture(name)) == expected


@pytest.mark.parametrize("name, expected", [
    ("slurm-v1.txt", Job("slurm", "280678", "interactive")),
    ("slurm-v2.txt", Job("slurm", "840392", "0")),
    ("slurm-v2-batch.txt", Job("slurm", "1076414", "batch")),
    ("docker-cgroupfs-v1.txt", None),
    ("k8s-crio-systemd-v1.txt", None),
    ("host-v1.txt", None),
])
def test_slurm_job_from_real_cgroup_files(name, expected):
    assert parse_slurm_cgroup(fixture(name)) == expected


def test_conmon_and_monitor_cgroups_are_not_containers():
    # crio-conmon-<id>.scope holds CRI-O's monitor, not the container (runc issue 4620)
    conmon = ("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod207aaad1_659f_4db8"
              "_88e0_46e0cdcc3004.slice/crio-conmon-32da98c8522068be05a7510a3eddb09cad6ed2f03286180d0e"
              "931d0d0b6224a6.scope")
    assert parse_container(conmon) == Container(pod_uid="207aaad1-659f-4db8-88e0-46e0cdcc3004")
    assert parse_container("0::/lxc.monitor.buster") is None


def test_environ_slurm_job_id():
    env = b"HOME=/root\0SLURM_JOB_ID=4242\0SLURM_STEP_ID=3\0PATH=/bin\0"
    assert parse_slurm_environ(env) == Job("slurm", "4242", "3")
    assert parse_slurm_environ(b"SLURM_JOB_ID=4242\0") == Job("slurm", "4242", None)
    assert parse_slurm_environ(b"SLURM_JOB_ID=\0") is None
    assert parse_slurm_environ(b"SLURM_JOB_ID=x; rm\0") is None
    assert parse_slurm_environ(b"") is None
    # only at a variable's start: another variable ending in the name is not the job
    assert parse_slurm_environ(b"OLD_SLURM_JOB_ID=7\0SLURM_JOB_ID=8\0") == Job("slurm", "8", None)
    assert parse_slurm_environ(b"OLD_SLURM_JOB_ID=7\0") is None


def test_nspid():
    assert parse_nspid("Name:\tsleep\nPid:\t966\nNSpid:\t966\t1\n") == (966, 1)
    assert parse_nspid("NSpid:\t9403\n") == (9403,)
    assert parse_nspid("Name:\tsleep\n") == ()
    assert parse_nspid("Name:\tNSpid: 5\nPid:\t966\n") == ()  # only at a line's start


