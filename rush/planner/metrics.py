"""The daemon's Prometheus metrics (prometheus-client), served on localhost by default.

Names (``deploy/prometheus/rush-alerts.yml`` and ``deploy/grafana/rush-dashboard.json``
use them; a test checks that every name they use is exported here):

=================================================  =========  ==========================
rush_cycle_duration_seconds                        histogram  one good cycle, end to end
rush_cycles_total{outcome}                         counter    ok, rjms_error, error
rush_queue_length                                  gauge      pending jobs in the last read
rush_running_jobs                                  gauge      running jobs in the last read
rush_decisions_total{kind,outcome}                 counter    kind: priority, hold, skip,
                                                              release, kill; outcome: done,
                                                              failed, dry-run, refused, ...
rush_rjms_errors_total                             counter    failed or stale queue reads
rush_consecutive_failures                          gauge      failed cycles in a row
rush_model_latency_seconds{model}                  histogram  prediction time per cycle
rush_model_errors_total{model}                     counter    unusable model files/inputs
rush_model_info{model,version}                     gauge      1 per model in use
rush_last_successful_cycle_timestamp_seconds       gauge      unix time
rush_dry_run                                       gauge      1 in dry-run, 0 when applying
rush_estimated_wait_seconds{quantile}              gauge      pending jobs' estimated waits
                                                              (0.5, 0.9, 1 = longest) now
rush_pending_without_estimate                      gauge      pending jobs with no start in
                                                              sight (too wide, drained nodes)
rush_runtime_source_jobs{source}                   gauge      queued and running jobs whose
                                                              runtime estimate is the
                                                              predictor's or the request
=================================================  =========  ==========================

Per-job estimates are not metrics (one series per job would be 10 000 series): they are in the
journal (``rush explain``, ``rush status``) and, on Flux, in each job's ``sched.t_estimate``.
"""

from __future__ import annotations

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from rush.collect.metrics_server import serve_metrics


class DaemonMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.cycle_seconds = Histogram(
            "rush_cycle_duration_seconds",
            "Duration of one successful daemon cycle",
            registry=r,
            buckets=(0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60),
        )
        self.cycles = Counter("rush_cycles", "Daemon cycles by outcome", ["outcome"], registry=r)
        self.queue_length = Gauge("rush_queue_length", "Pending jobs seen in the last cycle", registry=r)
        self.running_jobs = Gauge("rush_running_jobs", "Running jobs seen in the last cycle", registry=r)
        self.decisions = Counter(
            "rush_decisions", "Decisions by kind and outcome", ["kind", "outcome"], registry=r
        )
        self.rjms_errors = Counter("rush_rjms_errors", "Failed or stale reads of the RJMS", registry=r)
        self.consecutive_failures = Gauge(
            "rush_consecutive_failures", "Failed cycles in a row (0 after a good one)", registry=r
        )
        self.model_latency = Histogram(
            "rush_model_latency_seconds",
            "Model prediction time per cycle",
            ["model"],
            registry=r,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
        )
        self.model_errors = Counter(
            "rush_model_errors", "Model files or inputs that could not be used", ["model"], registry=r
        )
        self.model_info = Gauge("rush_model_info", "Model in use (value 1)", ["model", "version"], registry=r)
        self.last_success = Gauge(
            "rush_last_successful_cycle_timestamp_seconds", "Unix time of the last good cycle", registry=r
        )
        self.dry_run = Gauge("rush_dry_run", "1 when only journaling, 0 when applying", registry=r)
        self.estimated_wait = Gauge(
            "rush_estimated_wait_seconds",
            "Estimated wait of the pending jobs at the last cycle, by quantile (1: the longest)",
            ["quantile"],
            registry=r,
        )
        self.without_estimate = Gauge(
            "rush_pending_without_estimate", "Pending jobs with no start in sight", registry=r
        )
        self.runtime_sources = Gauge(
            "rush_runtime_source_jobs",
            "Jobs by the source of their runtime estimate at the last cycle (a predictor's name, request)",
            ["source"],
            registry=r,
        )
        for outcome in ("ok", "rjms_error", "error"):
            self.cycles.labels(outcome=outcome)  # export zeros so rate() works from the start

    def observe_estimates(self, now: float, starts: list[float]) -> None:
        """Set the wait quantiles from the pending jobs' estimated starts (inf: none)."""
        waits = np.asarray(starts, dtype=np.float64) - now
        finite = waits[np.isfinite(waits)]
        self.without_estimate.set(len(waits) - len(finite))
        for q in (0.5, 0.9, 1.0):
            self.estimated_wait.labels(quantile=f"{q:g}").set(
                float(np.quantile(finite, q)) if len(finite) else 0.0
            )

    def observe_runtime_sources(self, outputs: dict[int, dict]) -> None:
        """Count the jobs by ``runtime_source`` (rush.planner.runtime_prediction)."""
        counts: dict[str, int] = {}
        for out in outputs.values():
            source = out.get("runtime_source")
            if source is not None:
                counts[source] = counts.get(source, 0) + 1
        for source in set(counts) | {"request"}:
            self.runtime_sources.labels(source=source).set(counts.get(source, 0))

    def serve(self, address: str) -> int:
        """Serve /metrics on ``HOST:PORT``; returns the port (0 picks a free one)."""
        self.server, port = serve_metrics(address, self.registry, "daemon.metrics_address")
        return port

    def shutdown(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.shutdown()
            server.server_close()
