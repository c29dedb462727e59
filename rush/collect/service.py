"""The collector service (``rush collect --config rush.toml``).

Every ``interval`` seconds it runs each configured source, writes the Samples to the feature store
and prunes samples older than ``retention`` every ``prune_every`` cycles. A source that fails —
bad options, unreachable endpoint, unreadable file, or any unexpected exception — is logged and
counted, and the others keep running; the service itself does not stop on bad input.

Self-metrics (prometheus-client, own registry) on ``metrics_address``:

* ``rush_collect_samples_total{source}`` — samples written
* ``rush_collect_errors_total{source}`` — failed collections (including failed construction)
* ``rush_collect_last_success_timestamp_seconds{source}``
* ``rush_collect_cycle_duration_seconds`` — histogram of whole-cycle durations
* ``rush_collect_store_errors_total`` — failed store writes or prunes
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from rush.collect.base import Collector, Sample, get_collector
from rush.collect.config import CollectConfig, SourceConfig
from rush.collect.metrics_server import serve_metrics
from rush.errors import RushError

log = logging.getLogger("rush.collect")
# Reports CollectorService.run keeps (the most recent ones).
KEEP_REPORTS = 100


def open_store(path: Any) -> Any:
    from rush.collect.store import FeatureStore

    return FeatureStore(path)


@dataclass
class SourceOutcome:
    name: str
    samples: int = 0
    error: str = ""


@dataclass
class CycleReport:
    started: float
    duration: float = 0.0
    outcomes: list[SourceOutcome] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(o.samples for o in self.outcomes)

    @property
    def errors(self) -> dict[str, str]:
        return {o.name: o.error for o in self.outcomes if o.error}


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.samples = Counter(
            "rush_collect_samples", "Samples written to the feature store", ["source"], registry=registry
        )
        self.errors = Counter(
            "rush_collect_errors", "Failed collections per source", ["source"], registry=registry
        )
        self.last_success = Gauge(
            "rush_collect_last_success_timestamp_seconds",
            "Unix time of the last successful collection",
            ["source"],
            registry=registry,
        )
        self.cycle = Histogram(
            "rush_collect_cycle_duration_seconds",
            "Duration of a whole collection cycle",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60),
            registry=registry,
        )
        self.store_errors = Counter(
            "rush_collect_store_errors", "Failed store writes or prunes", registry=registry
        )


def _valid(sample: object) -> bool:
    # A collector bug must not poison the store: keep only well-formed finite samples.
    return (
        isinstance(sample, Sample)
        and isinstance(sample.host, str)
        and bool(sample.host)
        and isinstance(sample.metric, str)
        and isinstance(sample.value, int | float)
        and math.isfinite(sample.value)
        and isinstance(sample.timestamp, int | float)
        and math.isfinite(sample.timestamp)
    )


class CollectorService:
    def __init__(
        self, config: CollectConfig, *, store: Any = None, registry: CollectorRegistry | None = None
    ) -> None:
        self.config = config
        self.store = store if store is not None else open_store(config.store)
        self.registry = registry or CollectorRegistry()
        self.metrics = _Metrics(self.registry)
        self.sources = [s for s in config.sources if s.enabled]
        self._collectors: dict[str, Collector] = {}
        self._server: Any = None
        self.cycles = 0
        for source in self.sources:  # make the series exist (at 0) before the first failure
            self.metrics.samples.labels(source.name)
            self.metrics.errors.labels(source.name)

    # -- metrics endpoint

    def start_metrics_server(self) -> tuple[str, int] | None:
        """Serve self-metrics; returns the bound (host, port) — port 0 in the config picks a free one."""
        bound = self.config.metrics_host_port
        if bound is None:
            return None
        self._server, port = serve_metrics(
            self.config.metrics_address, self.registry, "collect.metrics_address"
        )
        return bound[0], port

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        close = getattr(self.store, "close", None)
        if callable(close):
            close()

    # -- collection

    def _collector(self, source: SourceConfig) -> Collector:
        # Built lazily and retried every cycle: a source whose endpoint is down at start-up
        # (or whose options are wrong) must not block the others.
        collector = self._collectors.get(source.name)
        if collector is None:
            collector = get_collector(source.collector, **source.options)
            self._collectors[source.name] = collector
        return collector

    def _run_source(self, source: SourceConfig) -> SourceOutcome:
        outcome = SourceOutcome(source.name)
        try:
            raw = self._collector(source).collect()
        except RushError as exc:
            outcome.error = str(exc)
        except TypeError as exc:  # usually unknown/missing options passed to the collector
            outcome.error = f"{source.name}: bad options for collector {source.collector!r}: {exc}"
        except Exception as exc:  # noqa: BLE001 - the service must survive any source failure
            log.debug("source %s raised", source.name, exc_info=True)
            outcome.error = f"{source.name}: unexpected {exc.__class__.__name__}: {exc}"
        else:
            samples = [s for s in raw if _valid(s)]
            if len(samples) < len(raw):
                log.warning("source %s: dropped %d malformed samples", source.name, len(raw) - len(samples))
            try:
                if samples:
                    self.store.insert(samples)
            except Exception as exc:  # noqa: BLE001
                self.metrics.store_errors.inc()
                outcome.error = f"store write failed: {exc}"
            else:
                outcome.samples = len(samples)
                self.metrics.samples.labels(source.name).inc(len(samples))
                self.metrics.last_success.labels(source.name).set(time.time())
                return outcome
        self.metrics.errors.labels(source.name).inc()
        log.error("collect %s failed: %s", source.name, outcome.error)
        return outcome

    def run_cycle(self) -> CycleReport:
        report = CycleReport(started=time.time())
        t0 = time.perf_counter()
        for source in self.sources:
            report.outcomes.append(self._run_source(source))
        self.cycles += 1
        if self.cycles % self.config.prune_every == 0:
            self.prune()
        report.duration = time.perf_counter() - t0
        self.metrics.cycle.observe(report.duration)
        log.info(
            "cycle %d: %d samples, %d errors, %.3f s",
            self.cycles,
            report.samples,
            len(report.errors),
            report.duration,
        )
        return report

    def prune(self) -> None:
        try:
            self.store.prune(time.time() - self.config.retention)
        except Exception as exc:  # noqa: BLE001
            self.metrics.store_errors.inc()
            log.error("prune failed: %s", exc)

    def run(
        self,
        *,
        cycles: int | None = None,
        stop: threading.Event | None = None,
        keep_reports: int = KEEP_REPORTS,
    ) -> deque[CycleReport]:
        """Run cycles every ``interval`` until ``stop`` is set or ``cycles`` have run.

        Returns the last ``keep_reports`` reports: a service that runs for months must not
        keep every cycle's report (the counters and the store keep the history).
        """
        stop = stop or threading.Event()
        reports: deque[CycleReport] = deque(maxlen=keep_reports)
        done = 0
        next_start = time.monotonic()
        while not stop.is_set():
            reports.append(self.run_cycle())
            done += 1
            if cycles is not None and done >= cycles:
                break
            # Fixed-rate schedule; a cycle longer than the interval starts the next one at once.
            next_start = max(next_start + self.config.interval, time.monotonic())
            stop.wait(max(0.0, next_start - time.monotonic()))
        return reports
