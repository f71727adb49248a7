"""What runs on each node, and the ssh argv that runs it. Argv lists only: never a local shell.

Remote commands are built from constants, with every variable part passed through
``shlex.quote``; a user's own remote command (per host or ``--remote-command``) is sent as one
argument, exactly as ``ssh HOST 'CMD'`` would send it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from gputop.cluster.hosts import HostSpec, validate_host
from gputop.cluster.ssh_options import validate_ssh_args

SSH = "ssh"
DEFAULT_CONNECT_TIMEOUT_S = 10
SERVER_ALIVE_INTERVAL_S = 5
SERVER_ALIVE_COUNT_MAX = 3

MODE_AGENT = "agent"
MODE_NVIDIA_SMI = "nvidia-smi"
MODE_NPU_SMI = "npu-smi"
MODES = (MODE_AGENT, MODE_NVIDIA_SMI, MODE_NPU_SMI)

# Fields asked of nvidia-smi in agentless mode. The parser maps columns by name (a header line,
# when one comes, names them; otherwise this order does), so the list can grow freely.
NVIDIA_SMI_FIELDS = (
    "timestamp", "count", "index", "uuid", "name", "pci.bus_id", "driver_version", "pstate",
    "memory.total", "memory.used", "memory.reserved", "utilization.gpu", "utilization.memory",
    "temperature.gpu", "temperature.memory", "fan.speed", "power.draw", "power.limit",
    "power.default_limit", "power.min_limit", "power.max_limit",
    "clocks.current.sm", "clocks.current.memory", "clocks.max.sm", "clocks.max.memory",
    "clocks_event_reasons.active",
)
# What every driver since R450 knows: used when a driver rejects a field of the list above.
NVIDIA_SMI_BASIC_FIELDS = (
    "timestamp", "count", "index", "uuid", "name", "pci.bus_id", "driver_version", "pstate",
    "memory.total", "memory.used", "utilization.gpu", "utilization.memory", "temperature.gpu",
    "fan.speed", "power.draw", "power.limit", "clocks.sm", "clocks.mem", "clocks.max.sm",
)
NPU_SMI_END = "@@gputop-npu-smi-end@@"


def _fmt_interval(interval: float) -> str:
    return f"{interval:g}"


def agent_command(interval: float, program: str = "gputop") -> str:
    return " ".join(shlex.quote(a) for a in (program, "agent", "--interval",
                                            _fmt_interval(interval)))


def nvidia_smi_command(interval: float, fields: Sequence[str] = NVIDIA_SMI_FIELDS) -> str:
    # -l takes whole seconds; -lms takes milliseconds for sub-second intervals.
    loop = ("-l", str(max(1, round(interval)))) if interval >= 1 else \
        ("-lms", str(max(100, round(interval * 1000))))
    argv = ("nvidia-smi", "--query-gpu=" + ",".join(fields),
            "--format=csv,noheader,nounits", *loop)
    return " ".join(shlex.quote(a) for a in argv)


def npu_smi_command(interval: float) -> str:
    # npu-smi has no loop flag: a POSIX sh loop, run through `sh -c` so that the remote login
    # shell (bash, zsh, fish, tcsh) only ever sees one quoted word. `exit 127` when npu-smi is
    # missing lets the viewer tell "not installed" from a failing tool.
    script = (
        "command -v npu-smi >/dev/null 2>&1 || { echo 'npu-smi: command not found' >&2; exit 127; }; "
        f"while :; do npu-smi info; echo {shlex.quote(NPU_SMI_END)}; "
        f"sleep {shlex.quote(_fmt_interval(max(1.0, interval)))}; done"
    )
    return "sh -c " + shlex.quote(script)


def remote_command(spec: HostSpec, mode: str, interval: float, override: str | None) -> str:
    if mode == MODE_AGENT:
        if spec.remote_command is not None:
            return spec.remote_command
        if override is not None:
            return override
        return agent_command(interval)
    if mode == MODE_NVIDIA_SMI:
        return nvidia_smi_command(interval)
    if mode == MODE_NPU_SMI:
        return npu_smi_command(interval)
    raise ValueError(f"unknown mode {mode!r}")


def ssh_argv(
    spec: HostSpec,
    command: str,
    *,
    ssh_config: str | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
    alive_interval: int = SERVER_ALIVE_INTERVAL_S,
    alive_count: int = SERVER_ALIVE_COUNT_MAX,
    ssh: str = SSH,
) -> list[str]:
    """The argv of one long-lived ssh session. Host keys are checked as the user's config says:
    this never weakens StrictHostKeyChecking."""
    # Checked again here, whatever built the spec: this is the last stop before ssh.
    validate_host(spec.name)
    validate_ssh_args(list(spec.ssh_args))
    argv = [ssh, "-T",
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={max(1, round(connect_timeout))}",
            "-o", f"ServerAliveInterval={alive_interval}",
            "-o", f"ServerAliveCountMax={alive_count}"]
    if ssh_config is not None:
        argv += ["-F", ssh_config]
    argv += list(spec.ssh_args)
    argv += ["--", spec.name, command]
    return argv
