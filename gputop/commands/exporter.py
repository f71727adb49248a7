"""`gputop exporter [--listen ADDR:PORT]`: serve this node's snapshots to Prometheus.

A consumer like the agent: the sampler reads the device once per interval, and every scrape is
answered from its latest snapshot. Nothing heavy is imported until the command runs, and
Textual never.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop.commands.common import bounded, source_config
from gputop.config.options import SourceConfig
from gputop.core import bounds
from gputop.exporter.node_label import DEFAULT_HOSTNAME_LABEL, HOSTNAME_LABELS

if TYPE_CHECKING:
    from gputop.alerts.model import Rule
    from gputop.exporter import own
    from gputop.formats import dcgm

DEFAULT_LISTEN = ":9400"  # dcgm-exporter's port: a node runs one or the other


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="ADDR:PORT",
                        help="where to serve /metrics and /health (default: :9400, every address)")
    parser.add_argument("--web-config", metavar="FILE",
                        help="TLS and basic auth, in the Prometheus exporter-toolkit web-config "
                             "format")
    parser.add_argument("-f", "--collectors", metavar="FILE", dest="counters_file",
                        help="the DCGM fields to serve, in dcgm-exporter's counters CSV format "
                             "(default: dcgm-exporter's default counters and the health, limit "
                             "and clock-event fields; see the docs' DCGM field table)")
    parser.add_argument("--hostname-label", choices=tuple(HOSTNAME_LABELS),
                        default=DEFAULT_HOSTNAME_LABEL,
                        help="the node label: hostname (default, as current dcgm-exporter), "
                             "Hostname (as its releases up to 4.5.3-4.8.2), or both")
    parser.add_argument("--top-processes", type=bounded(bounds.EXPORTER_TOP_PROCESSES),
                        default=None, metavar="N",
                        help="per-process series for the N processes holding the most memory "
                             f"on each GPU (default: 10; {bounds.EXPORTER_TOP_PROCESSES.describe()})")
    parser.add_argument("--alert-rules", nargs="?", const="-", default=None, metavar="FILE",
                        help="write gputop's alert rules (the defaults and the settings file's:"
                             " gputop --config FILE exporter --alert-rules) as a Prometheus rule"
                             " file to FILE (default: stdout), over the names served with these"
                             " options, and exit without opening a device")
    parser.add_argument("--recording-rules", nargs="?", const="-", default=None, metavar="FILE",
                        help="write the Prometheus recording rules `gputop report --prometheus`"
                             " reads over long ranges to FILE (default: stdout), and exit"
                             " without opening a device")


@dataclass(frozen=True)
class ExporterConfig:
    source: SourceConfig
    listen: str = DEFAULT_LISTEN  # ADDR:PORT as given
    web_config: str | None = None  # the exporter-toolkit web-config file
    hostname_label: str = DEFAULT_HOSTNAME_LABEL  # a key of HOSTNAME_LABELS
    top_processes: int | None = None  # None: gputop.exporter.own.DEFAULT_TOP_PROCESSES
    counters_file: str | None = None  # dcgm-exporter's counters CSV; None: the default fields
    alert_rules: str | None = None  # write the Prometheus rule file here ("-": stdout) and exit
    config_path: str | None = None  # the settings file whose alert rules --alert-rules writes
    no_config: bool = False  # --alert-rules: the default rules alone
    recording_rules: str | None = None  # write the report's recording rules here ("-": stdout)


def configure(args: argparse.Namespace) -> ExporterConfig:
    return ExporterConfig(source=source_config(args), listen=args.listen,
                          web_config=args.web_config, hostname_label=args.hostname_label,
                          top_processes=args.top_processes, counters_file=args.counters_file,
                          alert_rules=args.alert_rules, config_path=args.config,
                          no_config=args.no_config, recording_rules=args.recording_rules)


def options(config: ExporterConfig) -> own.Options:
    """The exporter's series options: its node label, process series and DCGM fields."""
    from gputop.exporter import own
    from gputop.formats import dcgm

    top = own.DEFAULT_TOP_PROCESSES if config.top_processes is None else config.top_processes
    counters = load_counters(config.counters_file) if config.counters_file else dcgm.DEFAULT
    return own.Options(hostname_labels=HOSTNAME_LABELS[config.hostname_label],
                       top_processes=top, counters=counters)


def rules_in_force(config_path: str | None, no_config: bool) -> tuple[Rule, ...]:
    """Return the alert rules gputop evaluates: the shipped defaults with the settings file's
    ``[alerts]`` rules over them (``no_config``: the defaults alone)."""
    from gputop.alerts.runtime import from_settings

    return from_settings(config_path, no_config).rules


def write_alert_rules(config: ExporterConfig, rules: Sequence[Rule]) -> int:
    """Write ``rules`` as a Prometheus rule file to ``config.alert_rules`` ("-": stdout), over
    the names the exporter serves with ``config``'s options."""
    from gputop.exporter.alert_rules import prometheus_rules

    return write_rule_file(prometheus_rules(rules, options(config)), config.alert_rules,
                           "--alert-rules")


def write_rule_file(text: str, path: str | None, flag: str) -> int:
    """Write a Prometheus rule file's ``text`` to ``path`` (None or "-": stdout); a file that
    cannot be written is a UsageError naming ``flag`` and the path."""
    from gputop.core.errors import UsageError

    if path in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise UsageError(f"exporter: {flag} {path}: {exc.strerror or exc}") from None
    return 0


def run(config: ExporterConfig) -> int:
    if config.alert_rules is not None:  # a file for Prometheus; no device is opened
        return write_alert_rules(config, rules_in_force(config.config_path, config.no_config))
    if config.recording_rules is not None:
        from gputop.exporter.recording_rules import recording_rules

        return write_rule_file(recording_rules(), config.recording_rules, "--recording-rules")
    from gputop import __version__
    from gputop.analysis.pipeline import default_analyzer
    from gputop.analysis.waste import WasteLedger
    from gputop.backends import open_backend
    from gputop.config.options import parse_listen
    from gputop.core import stop_signals
    from gputop.core.errors import GputopError
    from gputop.core.selection import select_devices
    from gputop.exporter import server, webconfig
    from gputop.sampler import Sampler

    host, port = parse_listen(config.listen)
    web = webconfig.load(config.web_config) if config.web_config else webconfig.WebConfig()
    opts = options(config)
    source = config.source
    backend = open_backend(source.backend, source.options)
    try:
        devices = select_devices(source.ids, backend.info().devices)
        waste = WasteLedger()  # its own, fed by its sampler: the idle counters (docs/waste.md)
        latest = server.Latest(opts, __version__, waste=waste)
        sampler = Sampler(backend, interval=source.interval, devices=devices,
                          analyze=default_analyzer(), annotate=waste.annotate)
        sampler.subscribe(latest.publish, latest.failed)
        try:
            httpd = server.serve(host, port, latest, web,
                                 stale_after=max(3 * source.interval, 5.0))
        except OSError as exc:
            raise GputopError(f"exporter: cannot listen on {config.listen}: "
                              f"{exc.strerror or exc}") from None
        stopped = threading.Event()

        def stop(signum: int, frame: object) -> None:
            stopped.set()
            threading.Thread(target=httpd.shutdown, daemon=True).start()

        previous = stop_signals.catch(stop)
        bound_host, bound_port = httpd.server_address[:2]
        scheme = "https" if web.tls is not None else "http"
        print(f"gputop exporter: {scheme}://{host or '0.0.0.0'}:{bound_port}/metrics "
              f"(backend {backend.name})", file=sys.stderr, flush=True)
        sampler.start()
        try:
            httpd.serve_forever(poll_interval=0.5)
        finally:
            stop_signals.release(previous)
            sampler.stop()
            httpd.server_close()
    finally:
        backend.close()
    return 0


def load_counters(path: str) -> tuple[dcgm.Metric, ...]:
    """The metrics a counters file asks for; one line on stderr for each row not served, and a
    UsageError naming the file and row that dcgm-exporter would refuse too."""
    from gputop.core.errors import UsageError
    from gputop.core.userfile import FileProblem, read_text
    from gputop.formats import dcgm_counters

    try:
        counters = dcgm_counters.parse(read_text(path))
    except (FileProblem, OSError, dcgm_counters.CountersError) as exc:
        raise UsageError(f"exporter: counters file {path}: {exc}") from None
    for note in counters.notes:
        print(f"gputop exporter: {path}: {note}", file=sys.stderr, flush=True)
    return counters.metrics
