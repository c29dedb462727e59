"""Prometheus HTTP API source: node_exporter's InfiniBand and RAPL series as rush Samples.

Two modes:

* ``mode="rate"`` (default): Prometheus computes the rates, ``sum by (<host label>) (rate(<counter>[1m]))``
  per metric, through ``/api/v1/query`` (latest value, :meth:`PrometheusCollector.collect`) or
  ``/api/v1/query_range`` (a window, :meth:`PrometheusCollector.collect_range`).
* ``mode="raw"``: the raw counters are read with ``/api/v1/query`` and turned into rates here with
  :class:`rush.collect.rates.RateTracker` (64-bit wrap and reset handling), for a Prometheus whose
  scrape interval is too long for ``rate(...[1m])`` or when exact counter deltas are wanted.
  The first call only primes the tracker.

node_exporter already multiplies the IB ``port_xmit_data``/``port_rcv_data`` counters (4-octet
words) by 4, so ``node_infiniband_port_data_*_bytes_total`` are bytes; RAPL counters are joules,
so their rate is watts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import MAX_FUTURE_S
from rush.errors import CollectorError

SOURCE = "prometheus"

# rush metric name -> node_exporter counter. Rates of these are bytes/s, packets/s and watts.
COUNTERS: dict[str, str] = {
    "ib_xmit_bytes_per_s": "node_infiniband_port_data_transmitted_bytes_total",
    "ib_rcv_bytes_per_s": "node_infiniband_port_data_received_bytes_total",
    "ib_xmit_packets_per_s": "node_infiniband_port_packets_transmitted_total",
    "ib_rcv_packets_per_s": "node_infiniband_port_packets_received_total",
    "rapl_package_watts": "node_rapl_package_joules_total",
    "rapl_dram_watts": "node_rapl_dram_joules_total",
}


@dataclass(frozen=True)
class Series:
    """One series of a Prometheus answer: its labels and (unix seconds, value) points."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


class PrometheusClient:
    """The two query endpoints of the Prometheus HTTP API, with errors that say where and what to do."""

    def __init__(self, url: str, *, timeout: float = 10.0, session: requests.Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()

    def query(self, expr: str, at: float | None = None) -> list[Series]:
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = at
        return self._get("/api/v1/query", params)

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        if end < start or step <= 0:
            raise CollectorError(
                f"bad range: start={start} end={end} step={step}",
                where=f"{self.url}/api/v1/query_range",
                fix="use start <= end and step > 0",
            )
        return self._get("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step})

    def _get(self, path: str, params: Mapping[str, Any]) -> list[Series]:
        where = f"{self.url}{path}"
        fix_url = f"check that Prometheus answers at {self.url} (the source's 'url' option)"
        try:
            response = self.session.get(where, params=params, timeout=self.timeout)
        except requests.Timeout as exc:
            raise CollectorError(f"no answer within {self.timeout:g} s", where=where, fix=fix_url) from exc
        except requests.RequestException as exc:
            raise CollectorError(
                f"cannot connect: {exc.__class__.__name__}", where=where, fix=fix_url
            ) from exc
        try:
            body = response.json()
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python's stack
            body = None
        if response.status_code >= 400:
            detail = _error_text(body) or response.text[:200].strip() or response.reason
            fix = "fix the PromQL expression" if response.status_code in (400, 422) else fix_url
            raise CollectorError(f"HTTP {response.status_code}: {detail}", where=where, fix=fix)
        if not isinstance(body, dict):
            raise CollectorError(
                f"answer is not a JSON object: {response.text[:120]!r}",
                where=where,
                fix=f"{self.url} must be the Prometheus server base URL (not /metrics or a proxy page)",
            )
        if body.get("status") != "success":
            raise CollectorError(
                f"Prometheus answered status {body.get('status')!r}: {_error_text(body)}",
                where=where,
                fix="fix the query or the Prometheus server",
            )
        return _parse_data(body.get("data"), where)


def _error_text(body: object) -> str:
    if isinstance(body, dict) and ("error" in body or "errorType" in body):
        return f"{body.get('errorType', 'error')}: {body.get('error', '')}"
    return ""


def _parse_data(data: object, where: str) -> list[Series]:
    bad = CollectorError(
        "unexpected answer layout", where=where, fix="is this a Prometheus HTTP API v1 server?"
    )
    if not isinstance(data, dict):
        raise bad
    kind, result = data.get("resultType"), data.get("result")
    if not isinstance(result, list):
        raise bad
    if kind == "scalar":
        result = [{"metric": {}, "value": result}]
        kind = "vector"
    out: list[Series] = []
    for item in result:
        try:
            raw = [item["value"]] if kind == "vector" else item["values"] if kind == "matrix" else None
            if raw is None:
                raise CollectorError(
                    f"cannot use resultType {kind!r}", where=where, fix="query a number series"
                )
            points = [(float(t), float(v)) for t, v in raw]
            labels = {str(k): str(v) for k, v in item.get("metric", {}).items()}
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise bad from exc
        # NaN/Inf (e.g. a rate over a single point) carry no measurement; nor does a point
        # without a real time or stamped in the future (it would sort after every real sample).
        horizon = time.time() + MAX_FUTURE_S
        out.append(
            Series(
                labels, [(t, v) for t, v in points if math.isfinite(v) and math.isfinite(t) and t <= horizon]
            )
        )
    return out


@dataclass(frozen=True)
class PrometheusOptions:
    """The prometheus source's options (meanings in :class:`PrometheusCollector`)."""

    url: str
    metrics: list[str] | None = None
    queries: dict[str, str] | None = None
    host_label: str = "instance"
    strip_port: bool = True
    rate_window: str = "1m"
    mode: str = "rate"
    selector: str = ""
    raw_lookback: str = "5m"
    timeout: float = 10.0


@register_collector(SOURCE)
class PrometheusCollector(Collector):
    """node_exporter IB/RAPL rates from a Prometheus server, one Sample per host and metric.

    Options (all from the ``[[collect.sources]]`` table): ``url``; ``metrics`` — rush names to read
    (default all of :data:`COUNTERS`), or ``queries`` — ``{name: PromQL}`` used verbatim in rate
    mode; ``host_label`` (``instance``); ``strip_port`` (drop ``:9100`` from the host);
    ``rate_window`` (``1m``); ``mode`` (``rate`` or ``raw``); ``selector`` — extra label matchers
    such as ``job="node"``; ``raw_lookback`` — how far back raw mode looks for the last
    scrape (``5m``); ``timeout`` seconds.
    """

    options_type = PrometheusOptions

    def __init__(self, options: PrometheusOptions, session: requests.Session | None = None) -> None:
        url, metrics, queries, host_label = options.url, options.metrics, options.queries, options.host_label
        strip_port, rate_window, mode, selector = (
            options.strip_port,
            options.rate_window,
            options.mode,
            options.selector,
        )
        raw_lookback, timeout = options.raw_lookback, options.timeout
        if mode not in ("rate", "raw"):
            raise CollectorError(
                f"unknown mode {mode!r}", where="prometheus source 'mode'", fix="use 'rate' or 'raw'"
            )
        unknown = [m for m in metrics or [] if m not in COUNTERS]
        if unknown:
            raise CollectorError(
                f"unknown metric(s) {', '.join(unknown)}",
                where="prometheus source 'metrics'",
                fix=f"use some of: {', '.join(COUNTERS)} (or give 'queries')",
            )
        if queries and mode == "raw":
            raise CollectorError(
                "'queries' needs mode 'rate'", where="prometheus source", fix="drop 'queries' or mode"
            )
        self.client = PrometheusClient(url, timeout=timeout, session=session)
        self.host_label = host_label
        self.strip_port = strip_port
        self.mode = mode
        self.selector = selector
        self.raw_lookback = raw_lookback
        names = metrics or list(COUNTERS)
        self.counters = {name: COUNTERS[name] for name in names}
        self.queries = (
            dict(queries)
            if queries
            else {
                name: f"sum by ({host_label}) (rate({counter}{self._matchers()}[{rate_window}]))"
                for name, counter in self.counters.items()
            }
        )
        self._tracker: Any = None

    def _matchers(self) -> str:
        return f"{{{self.selector}}}" if self.selector else ""

    def _host(self, labels: Mapping[str, str]) -> str | None:
        host = labels.get(self.host_label)
        if host is None:
            return None
        if self.strip_port and host.count(":") == 1:  # "node1:9100"; leave IPv6 literals alone
            host = host.rsplit(":", 1)[0]
        return host

    def _samples(self, metric: str, series: list[Series]) -> list[Sample]:
        out = []
        for s in series:
            host = self._host(s.labels)
            if host is None:
                continue  # no host label: cannot attribute to a node
            out += [
                Sample(timestamp=t, host=host, source=SOURCE, metric=metric, value=v) for t, v in s.points
            ]
        return out

    def collect(self) -> list[Sample]:
        if self.mode == "raw":
            return self._collect_raw()
        samples: list[Sample] = []
        for metric, expr in self.queries.items():
            samples += self._samples(metric, self.client.query(expr))
        return samples

    def collect_range(self, start: float, end: float, step: float = 15.0) -> list[Sample]:
        """Rates over ``[start, end]`` every ``step`` seconds (rate mode only)."""
        if self.mode != "rate":
            raise CollectorError("collect_range needs mode 'rate'", where="prometheus source 'mode'")
        samples: list[Sample] = []
        for metric, expr in self.queries.items():
            samples += self._samples(metric, self.client.query_range(expr, start, end, step))
        return samples

    def _collect_raw(self) -> list[Sample]:
        from rush.collect.rates import RateTracker

        if self._tracker is None:
            self._tracker = RateTracker()
        now = time.time()
        per_host: dict[tuple[str, str], tuple[float, float]] = {}
        for metric, counter in self.counters.items():
            # A range selector returns the scrape timestamps; an instant vector would stamp the
            # last value with the query time and distort the rate.
            for s in self.client.query(f"{counter}{self._matchers()}[{self.raw_lookback}]", at=now):
                host = self._host(s.labels)
                if host is None or not s.points:
                    continue
                t, value = s.points[-1]
                key = (host, metric, tuple(sorted(s.labels.items())))
                rate = self._tracker.update(key, t, value)
                if rate is None:
                    continue  # first reading of this counter, or no time elapsed
                t0, total = per_host.get((host, metric), (t, 0.0))
                per_host[(host, metric)] = (max(t0, t), total + rate)
        return [
            Sample(timestamp=t, host=host, source=SOURCE, metric=metric, value=v)
            for (host, metric), (t, v) in sorted(per_host.items())
        ]
