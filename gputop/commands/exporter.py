"""`gputop exporter [--listen ADDR:PORT]`: serve this node's snapshots to Prometheus.

A consumer like the agent: the sampler reads the device once per interval, and every scrape is
answered from its latest snapshot. Nothing heavy is imported until the command runs, and
Textual never.
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gputop.commands.common import bounded, source_config
from gputop.config.options import SourceConfig
from gputop.core import bounds
from gputop.exporter.node_label import DEFAULT_HOSTNAME_LABEL, HOSTNAME_LABELS

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class ExporterConfig:
    source: SourceConfig
    listen: str = DEFAULT_LISTEN  # ADDR:PORT as given
    web_config: str | None = None  # the exporter-toolkit web-config file
    hostname_label: str = DEFAULT_HOSTNAME_LABEL  # a key of HOSTNAME_LABELS
    top_processes: int | None = None  # None: gputop.exporter.own.DEFAULT_TOP_PROCESSES
    counters_file: str | None = None  # dcgm-exporter's counters CSV; None: the default fields


def configure(args: argparse.Namespace) -> ExporterConfig:
    return ExporterConfig(source=source_config(args), listen=args.listen,
                          web_config=args.web_config, hostname_label=args.hostname_label,
                          top_processes=args.top_processes, counters_file=args.counters_file)


def run(config: ExporterConfig) -> int:
    from gputop import __version__
    from gputop.analysis.pipeline import default_analyzer
    from gputop.backends import open_backend
    from gputop.config.options import parse_listen
    from gputop.core import stop_signals
    from gputop.core.errors import GputopError
    from gputop.core.selection import select_devices
    from gputop.exporter import own, server, webconfig
    from gputop.formats import dcgm
    from gputop.sampler import Sampler

    host, port = parse_listen(config.listen)
    top = own.DEFAULT_TOP_PROCESSES if config.top_processes is None else config.top_processes
    web = webconfig.load(config.web_config) if config.web_config else webconfig.WebConfig()
    counters = load_counters(config.counters_file) if config.counters_file else dcgm.DEFAULT
    opts = own.Options(hostname_labels=HOSTNAME_LABELS[config.hostname_label],
                       top_processes=top, counters=counters)
    source = config.source
    backend = open_backend(source.backend, source.options)
    try:
        devices = select_devices(source.ids, backend.info().devices)
        latest = server.Latest(opts, __version__)
        sampler = Sampler(backend, interval=source.interval, devices=devices,
                          analyze=default_analyzer())
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
