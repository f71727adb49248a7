"""`gputop cluster HOST… | --hosts FILE`: watch many nodes over SSH.

Without ``--once`` it opens the cluster screen (Textual). ``--once`` connects to every node,
waits until each has data or has failed, prints one aggregate (``--json``: one document), exits.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from gputop.commands.common import bounded
from gputop.config.cluster import ClusterViewConfig
from gputop.core import bounds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hosts", nargs="*", metavar="HOST",
                        help="ssh destinations or ~/.ssh/config aliases")
    parser.add_argument("--hosts", dest="hosts_file", metavar="FILE",
                        help="TOML file of [[host]] tables: name, remote_command, ssh_args")
    parser.add_argument("--ssh-config", metavar="FILE",
                        help="ssh client config to use instead of ~/.ssh/config (ssh -F)")
    parser.add_argument("--remote-command", metavar="CMD",
                        help="what to run on each node (default: 'gputop agent --interval SEC');"
                             " a host's own remote_command wins")
    parser.add_argument("--connect-timeout", type=bounded(bounds.CONNECT_TIMEOUT), default=10.0,
                        metavar="SEC", help="ssh ConnectTimeout (default: 10;"
                                            f" {bounds.CONNECT_TIMEOUT.describe()})")
    parser.add_argument("--max-opening", type=bounded(bounds.MAX_OPENING), default=8, metavar="N",
                        help="connections being opened at once, at most (default: 8;"
                             f" {bounds.MAX_OPENING.describe()})")
    parser.add_argument("--no-fallback", action="store_true",
                        help="do not fall back to nvidia-smi / npu-smi where gputop is missing")
    parser.add_argument("--once", action="store_true",
                        help="print every node once and exit (exit status 1 if any is not ok)")
    parser.add_argument("--json", action="store_true",
                        help="with --once: one JSON document {\"nodes\": [...]}")
    parser.add_argument("--timeout", type=bounded(bounds.ONCE_TIMEOUT), default=None, metavar="SEC",
                        help="with --once: give up waiting after SEC (default: connect timeout"
                             " + 20)")
    parser.add_argument("--prometheus", metavar="URL",
                        help="read the nodes from this Prometheus server's HTTP API instead of "
                             "SSH (every scrape target of dcgm-exporter or gputop exporter)")
    parser.add_argument("--selector", metavar="MATCHERS",
                        help='with --prometheus: label matchers such as {job="gpus"}')
    parser.add_argument("--slurm", metavar="JOBID",
                        help="the nodes of this Slurm job (squeue, scontrol show hostnames), "
                             "showing only its GPUs (those Slurm gave it, else those running its processes)")
    parser.add_argument("--slurm-me", action="store_true",
                        help="the nodes of all your running Slurm jobs, showing only their GPUs")
    parser.add_argument("--theme", default=argparse.SUPPRESS, help="dashboard theme")
    # SUPPRESS: `gputop --config F cluster` keeps the value the top level parsed.
    parser.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                        help="the live view: the settings file whose alert rules it evaluates on"
                             " every node and whose channels it notifies (default:"
                             " $GPUTOP_CONFIG, else $XDG_CONFIG_HOME/gputop/config.toml)")
    parser.add_argument("--no-config", action="store_true", default=argparse.SUPPRESS,
                        help="the live view: ignore the settings file (the default rules alone)")


@dataclass(frozen=True)
class ClusterConfig:
    """What `gputop cluster` was asked for, checked by its parser."""

    hosts: tuple[str, ...] = ()
    hosts_file: str | None = None
    ssh_config: str | None = None
    remote_command: str | None = None
    connect_timeout: float = 10.0
    max_opening: int = 8
    fallback: bool = True  # fall back to nvidia-smi / npu-smi where gputop is missing
    once: bool = False
    json: bool = False
    timeout: float | None = None  # --once: None is the connect timeout + 20 s
    prometheus: str | None = None
    selector: str | None = None
    slurm: str | None = None  # a Slurm job id
    slurm_me: bool = False
    view: ClusterViewConfig = ClusterViewConfig()
    config: str | None = None  # the settings file of the live view's alert rules
    no_config: bool = False

    @property
    def interval(self) -> float:
        return self.view.interval


def configure(args: argparse.Namespace) -> ClusterConfig:
    return ClusterConfig(
        hosts=tuple(args.hosts), hosts_file=args.hosts_file, ssh_config=args.ssh_config,
        remote_command=args.remote_command, connect_timeout=args.connect_timeout,
        max_opening=args.max_opening, fallback=not args.no_fallback, once=args.once,
        json=args.json, timeout=args.timeout, prometheus=args.prometheus,
        selector=args.selector, slurm=args.slurm, slurm_me=args.slurm_me,
        view=ClusterViewConfig(interval=args.interval, theme=args.theme),
        config=args.config, no_config=bool(args.no_config))


class SlurmJobs:
    """The jobs ``--slurm JOBID`` and ``--slurm-me`` name, with their nodes and the GPUs Slurm
    gave them there: Slurm is asked once, when first needed, and the answers kept here."""

    def __init__(self, job: str | None = None, mine: bool = False,
                 jobs: dict[str, list[str]] | None = None) -> None:
        """``jobs``: job id -> nodes, already known (Slurm is then not asked for them)."""
        self.job = job
        self.mine = mine
        self._jobs = jobs
        self._gres: dict[str, dict] | None = None

    def jobs(self) -> dict[str, list[str]]:
        """Job id -> nodes, for --slurm / --slurm-me (none without them)."""
        from gputop.cluster import slurm

        if self._jobs is None:
            jobs: dict[str, list[str]] = {}
            if self.job:
                jobs[self.job] = slurm.job_nodes(self.job)
            if self.mine:
                jobs.update(slurm.my_jobs())
            self._jobs = jobs
        return self._jobs

    def nodes(self) -> list[str]:
        nodes: list[str] = []
        for hosts in self.jobs().values():
            nodes += [h for h in hosts if h not in nodes]
        return nodes

    def gres(self) -> dict[str, dict]:
        """Node -> job id -> the GPUs Slurm gave the job there (``slurm.GpuGrant``). A job Slurm
        cannot describe any more (it ended since squeue listed it) has none: its GPUs are then
        those running its processes."""
        from gputop.cluster import slurm

        if self._gres is None:
            by_node: dict[str, dict] = {}
            for job in self.jobs():
                try:
                    grants = slurm.job_gpus(job)
                except slurm.SlurmError:
                    continue
                for node, grant in grants.items():
                    by_node.setdefault(node, {})[job] = grant
            self._gres = by_node
        return self._gres


def load_specs(config: ClusterConfig, slurm_jobs: SlurmJobs):
    from gputop.cluster.hosts import (
        dedupe,
        hosts_from_names,
        load_hosts_file,
        validate_remote_command,
    )
    from gputop.core.errors import UsageError

    specs = hosts_from_names(list(config.hosts) + slurm_jobs.nodes())
    if config.hosts_file:
        specs += load_hosts_file(config.hosts_file)
    if not specs:
        raise UsageError("no hosts: name some (gputop cluster node1 node2) or use --hosts FILE")
    if config.remote_command is not None:
        validate_remote_command(config.remote_command, "--remote-command")
    return dedupe(specs)


class JobView:
    """A cluster whose node statuses show only the GPUs of some Slurm jobs (the live screen and
    ``--once`` alike); everything else is the cluster's own."""

    def __init__(self, cluster, job_ids, gres: dict[str, dict] | None = None) -> None:
        self._cluster = cluster
        self._jobs = set(job_ids)
        self._gres = gres or {}
        self._cache: dict[str, tuple[int, object]] = {}

    # What the screen and --once read of a cluster besides its statuses: the cluster's own.
    @property
    def version(self) -> int:
        return self._cluster.version

    @property
    def problem(self) -> str | None:
        return self._cluster.problem

    def start(self) -> None:
        self._cluster.start()

    def stop(self) -> None:
        self._cluster.stop()

    def wait(self, predicate, timeout: float) -> bool:
        return self._cluster.wait(predicate, timeout)

    def settled(self, statuses) -> bool:
        return self._cluster.settled(statuses)

    def detail(self, hosts=(), every: bool = False) -> None:
        self._cluster.detail(hosts, every=every)

    def _only(self, status):
        from dataclasses import replace

        from gputop.cluster.job_view import only_jobs

        if status.data is None:
            return status
        cached = self._cache.get(status.host)
        if cached is None or cached[0] != status.seq or cached[1].data is None:
            kept = only_jobs(status.snapshot, self._jobs, self._gres.get(status.host))
            cached = (status.seq, replace(status, data=kept))
            self._cache[status.host] = cached
        return cached[1]

    def statuses(self):
        return [self._only(s) for s in self._cluster.statuses()]

    def status(self, host: str):
        return self._only(self._cluster.status(host))

    @property
    def jobs(self) -> list[str]:
        """The jobs watched (``--slurm``, ``--slurm-me``), in order."""
        return sorted(self._jobs)

    def report(self, job: str):
        """The job across its nodes (``job_view.JobReport``), from the nodes' latest whole
        snapshots and the GPUs Slurm gave it there."""
        from gputop.cluster.job_view import report_from

        return report_from(job, self._cluster.statuses(), self._gres)

    def reports(self):
        """Each watched job across its nodes, in the order of ``jobs``."""
        return [self.report(job) for job in self.jobs]


def make_cluster(config: ClusterConfig, specs, slurm_jobs: SlurmJobs, *, once: bool):
    from gputop.cluster.node import Policy
    from gputop.cluster.transport import Cluster
    from gputop.core.errors import UsageError

    if config.ssh_config is not None:
        from pathlib import Path

        if not Path(config.ssh_config).is_file():
            raise UsageError(f"ssh config not found: {config.ssh_config}")
    policy = Policy(interval=config.interval, connect_timeout=config.connect_timeout,
                    reconnect=not once, fallback=config.fallback,
                    override_command=config.remote_command)
    cluster = Cluster(specs, policy, ssh_config=config.ssh_config, max_opening=config.max_opening)
    jobs = slurm_jobs.jobs()
    return JobView(cluster, jobs, slurm_jobs.gres()) if jobs else cluster


def run(config: ClusterConfig) -> int:
    from gputop.core.errors import UsageError

    if config.json and not config.once:
        raise UsageError("--json needs --once (the live view is the terminal UI)")
    if config.once and (config.config is not None or config.no_config):
        raise UsageError("--config and --no-config are the live view's (its alert rules), "
                         "not --once's")
    if config.prometheus is not None or config.selector is not None:
        if config.slurm_me:
            # whose jobs those are is squeue's to say, and the series carry jobs, not users
            raise UsageError("--slurm-me asks squeue for your jobs and watches them over SSH; "
                             "with --prometheus name the job: --slurm JOBID")
        if config.slurm is not None:
            from gputop.cluster.slurm import SlurmError, valid_job_id

            if not valid_job_id(config.slurm):
                raise SlurmError(f"not a Slurm job id: {config.slurm!r}")
        return run_prometheus(config)
    slurm_jobs = SlurmJobs(config.slurm, config.slurm_me)
    specs = load_specs(config, slurm_jobs)
    if config.once:
        return run_once(config, specs, slurm_jobs)
    from gputop.tui.cluster import run_cluster

    alerts = cluster_alerts(config)
    cluster = make_cluster(config, specs, slurm_jobs, once=False)
    if isinstance(cluster, JobView):
        return run_cluster(config.view, cluster, alerts, jobs=cluster.jobs,
                           job_report=cluster.report)
    return run_cluster(config.view, cluster, alerts)


def cluster_alerts(config: ClusterConfig):
    """The live view's alert rules, where the viewer's settings file has an ``[alerts]``
    table (None: no alerts), checked before any node is connected (a bad one is one line and
    exit 2). Asked for, not by default: the viewer evaluates every node's every snapshot, and
    over Prometheus fetches every node whole for it."""
    from gputop.alerts.runtime import written_config
    from gputop.cluster.alerts import ClusterAlerts

    rules = written_config(config.config, config.no_config)
    return ClusterAlerts(rules) if rules is not None else None


def run_once(config: ClusterConfig, specs, slurm_jobs: SlurmJobs) -> int:
    timeout = config.timeout if config.timeout is not None else config.connect_timeout + 20.0
    cluster = make_cluster(config, specs, slurm_jobs, once=True)
    reports = cluster.reports if isinstance(cluster, JobView) else None
    return _print_once(config, cluster, timeout, reports)


def make_prometheus_cluster(config: ClusterConfig, *, once: bool):
    """The Prometheus transport; with ``once``, ``--timeout`` bounds every request and all of
    them together (``--once --timeout N`` ends within N s, whatever the server does)."""
    from gputop.cluster.prometheus import (
        DEFAULT_REFRESH_TIMEOUT_S,
        PrometheusCluster,
        check_selector,
        check_url,
    )
    from gputop.core.errors import UsageError

    if config.prometheus is None:
        raise UsageError("--selector needs --prometheus URL")
    if config.hosts or config.hosts_file:
        raise UsageError("--prometheus reads the nodes from Prometheus: name no hosts")
    url, selector = check_url(config.prometheus), check_selector(config.selector)
    if not once:
        return PrometheusCluster(url, selector, interval=config.interval, job=config.slurm)
    timeout = config.timeout if config.timeout is not None else DEFAULT_REFRESH_TIMEOUT_S
    return PrometheusCluster(url, selector, interval=config.interval, once=True,
                             timeout=timeout, refresh_timeout=timeout, job=config.slurm)


def run_prometheus(config: ClusterConfig) -> int:
    from gputop.cluster.prometheus import PARSE_GRACE_S

    if not config.once:
        from gputop.tui.cluster import run_cluster

        alerts = cluster_alerts(config)
        cluster = make_prometheus_cluster(config, once=False)
        if config.slurm is None:
            return run_cluster(config.view, cluster, alerts)
        return run_cluster(config.view, cluster, alerts, jobs=[config.slurm],
                           job_report=_labelled_job(cluster))
    cluster = make_prometheus_cluster(config, once=True)
    reports = None
    if config.slurm is not None:
        job, labelled = config.slurm, _labelled_job(cluster)
        reports = lambda: [labelled(job)]  # noqa: E731
    # The transport ends itself by its deadline, with the reason as its problem; the wait's own
    # time-out is only a backstop, past the grace a refresh gives an answer still parsing.
    return _print_once(config, cluster, cluster.refresh_timeout + 2 * PARSE_GRACE_S, reports)


def _labelled_job(cluster):
    """What gives a job across the nodes of a Prometheus cluster watching it (``job=``): each
    node's snapshot holds only the GPUs whose series carry its ``hpc_job``, so the job's GPUs
    are all of them."""
    from gputop.cluster.job_view import report

    return lambda job: report(job, {s.host: s.snapshot for s in cluster.statuses()})


def _print_once(config: ClusterConfig, cluster, timeout: float, reports=None) -> int:
    """Print the cluster once it has settled; ``reports``: where it watches Slurm jobs, what
    gives each job across its nodes (``JobView.reports``), printed after the nodes."""
    import sys
    import time

    from gputop.cluster import states
    from gputop.core import jsonout, stop_signals
    from gputop.core.output import write_stdout
    from gputop.core.visible import visible

    signalled: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        signalled.append(signum)
        raise _Stopped  # out of the wait; the finally below ends every session

    previous = stop_signals.catch(on_signal)
    try:
        cluster.start()
        cluster.wait(cluster.settled, timeout)
    except _Stopped:
        pass
    finally:
        cluster.stop()
        stop_signals.release(previous)
    if signalled:
        return 128 + signalled[0]
    now = time.monotonic()
    statuses = cluster.statuses()
    jobs = reports() if reports is not None else None
    if cluster.problem:
        print(f"gputop cluster: {visible(cluster.problem)}", file=sys.stderr)
    if config.json:
        write_stdout(jsonout.dumps(once_document(statuses, now, jobs), separators=(",", ":"))
                     + "\n")
    else:
        from gputop.cluster.job_view import render_report

        write_stdout(render_table(statuses, now)
                     + "".join("\n" + render_report(r) for r in jobs or ()))
    ok = bool(statuses) and not cluster.problem
    return 0 if ok and all(s.state == states.OK for s in statuses) else 1


class _Stopped(BaseException):
    """A stop signal (SIGTERM, SIGHUP, Ctrl-C) while --once waits."""


def once_document(statuses, now: float, jobs=None) -> dict:
    """The ``--once --json`` document: the nodes, and with ``jobs`` (``job_view.JobReport``s)
    each job across its nodes with its stragglers."""
    from gputop.cluster.job_view import report_document
    from gputop.core.model import snapshot_to_json

    nodes = []
    for s in statuses:
        age = s.age(now)
        nodes.append({
            "host": s.host, "state": s.state, "mode": s.mode, "reason": s.reason,
            "age_s": None if age is None else round(age, 3),
            "snapshot": snapshot_to_json(s.snapshot) if s.snapshot is not None else None,
        })
    doc: dict = {"nodes": nodes}
    if jobs is not None:
        doc["jobs"] = [report_document(r) for r in jobs]
    return doc


def render_table(statuses, now: float) -> str:
    """The ``--once`` table. Host names and reasons are what nodes, Prometheus targets and
    their tools said: shown through ``gputop.core.visible``, never obeyed by the terminal."""
    from dataclasses import replace

    from gputop.cluster.aggregate import node_row, totals
    from gputop.core.formatting import num
    from gputop.core.visible import visible

    rows = [node_row(s, now) for s in statuses]
    rows = [replace(r, host=visible(r.host), reason=visible(r.reason)) for r in rows]
    width = max([4, *(len(r.host) for r in rows)])
    out = [f"{'HOST':<{width}}  {'STATE':<17} {'MODE':<10} {'GPUS':>4} {'UTIL':>5} "
           f"{'MEMORY (MiB)':>17} {'POWER (W)':>13} {'HINTS':>5}  REASON"]
    for r in rows:
        out.append(
            f"{r.host:<{width}}  {r.state:<17} {r.mode:<10} {num(r.gpus, 'd'):>4} "
            f"{num(r.util_pct, '.0f', '%'):>5} {num(r.mem_used_mib) + ' / ' + num(r.mem_total_mib):>17} "
            f"{num(r.power_w) + ' / ' + num(r.power_limit_w):>13} {num(r.hints, 'd'):>5}  {r.reason}")
    t = totals(rows)
    out.append(f"{t['ok']}/{t['nodes']} nodes ok, {num(t['gpus'], '.0f')} GPUs, "
               f"mean utilization {num(t['util_pct'], '.0f', '%')}, memory "
               f"{num(t['mem_used_mib'])} / {num(t['mem_total_mib'])} MiB, power {num(t['power_w'])} W")
    return "\n".join(out) + "\n"
