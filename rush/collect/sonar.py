"""Sonar-style Cassandra tables (LDMS metrics stored by host and time), via cassandra-driver.

The keyspace, table and columns are configurable. Rows are partitioned by host name and
clustered by timestamp, as LDMS's Cassandra store writes them, e.g.::

    CREATE TABLE ldms.metrics (hostname text, ts timestamp, metric text, value double,
                               PRIMARY KEY ((hostname), ts, metric));

either *wide* (one column per metric: ``metrics = {"column": "ldms metric name"}``) or
*long* (``metric_column`` and ``value_column``). One prepared statement
``SELECT ... WHERE <host> = ? AND <ts> > ? AND <ts> <= ?`` is run per host (a partition
read, which Cassandra serves far better than ``IN`` over partitions). The driver returns
rows as named tuples and ``timestamp`` columns as naive UTC datetimes. Metric names go
through the LDMS normaliser, so counters become the same per-second rates as from
store_csv files. cassandra-driver is imported only when a session is first needed.
"""

from __future__ import annotations

import calendar
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.ldms import normalize
from rush.collect.rates import RateTracker
from rush.errors import BackendUnavailableError, CollectorError

log = logging.getLogger(__name__)


def _seconds(value: object) -> float:
    if isinstance(value, datetime):
        # The driver returns naive UTC datetimes for timestamp columns.
        return calendar.timegm(value.utctimetuple()) + value.microsecond / 1e6
    return float(value)  # type: ignore[arg-type]


def _datetime(seconds: float) -> datetime:
    """A naive UTC datetime, as the driver encodes timestamp parameters."""
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class SonarOptions:
    """The sonar source's options (its ``[[collect.sources]]`` table)."""

    hosts: Sequence[str] = ()
    contact_points: Sequence[str] = ("127.0.0.1",)
    port: int = 9042
    keyspace: str = "ldms"
    table: str = "metrics"
    host_column: str = "hostname"
    time_column: str = "ts"
    metrics: dict[str, str] | None = None  # wide tables: {column: rush name}
    metric_column: str | None = None  # long tables: the metric's name column...
    value_column: str | None = None  # ...and its value column
    lookback: float = 300.0


@register_collector("sonar")
class SonarCollector(Collector):
    options_type = SonarOptions

    def __init__(self, options: SonarOptions = SonarOptions(), session=None) -> None:
        hosts, contact_points, port, keyspace = (
            options.hosts,
            options.contact_points,
            options.port,
            options.keyspace,
        )
        table, host_column, time_column = options.table, options.host_column, options.time_column
        metrics, metric_column, value_column = options.metrics, options.metric_column, options.value_column
        lookback = options.lookback
        if not hosts:
            raise CollectorError(
                "no hosts to read", where="collect.sources.sonar.hosts", fix='hosts = ["node001", ...]'
            )
        if metrics is None and not (metric_column and value_column):
            raise CollectorError(
                "give either metrics = {column = name} (wide tables) or metric_column and value_column (long tables)",
                where="collect.sources.sonar",
            )
        for ident in (
            keyspace,
            table,
            host_column,
            time_column,
            metric_column or "m",
            value_column or "v",
            *(metrics or {}),
        ):
            if not ident.replace("_", "").isalnum():
                raise CollectorError(
                    f"bad identifier {ident!r}",
                    where="collect.sources.sonar",
                    fix="letters, digits and _ only",
                )
        self.hosts = list(hosts)
        self.contact_points, self.port, self.keyspace = list(contact_points), port, keyspace
        self.table, self.host_column, self.time_column = table, host_column, time_column
        self.metrics, self.metric_column, self.value_column = metrics, metric_column, value_column
        self.lookback = lookback
        self._session = session
        self._statement = None
        self.rates = RateTracker()
        self.last_seen: dict[str, float] = {}
        self.rejected_rows = 0  # rows without a usable time, or stamped in the future
        self.bad_values = 0  # values that are not finite numbers

    @property
    def session(self):
        if self._session is None:
            try:
                from cassandra.cluster import Cluster
            except ImportError as exc:
                raise BackendUnavailableError(
                    "the sonar source needs cassandra-driver",
                    where="collect.sources.sonar",
                    fix="pip install 'rush[cassandra]'",
                ) from exc
            try:
                self._session = Cluster(self.contact_points, port=self.port).connect(self.keyspace)
            except Exception as exc:  # the driver raises NoHostAvailable and friends
                raise CollectorError(
                    f"cannot connect to Cassandra: {exc}",
                    where=f"{self.contact_points}:{self.port}",
                    fix="check contact_points and port",
                ) from exc
        return self._session

    def query(self) -> str:
        columns = [self.time_column]
        columns += list(self.metrics) if self.metrics else [self.metric_column, self.value_column]
        return (
            f"SELECT {', '.join(columns)} FROM {self.keyspace}.{self.table} "
            f"WHERE {self.host_column} = ? AND {self.time_column} > ? AND {self.time_column} <= ?"
        )

    def _statement_for_session(self):
        if self._statement is None:
            try:
                self._statement = self.session.prepare(self.query())
            except BackendUnavailableError:
                raise
            except Exception as exc:  # InvalidRequest: unknown table or column
                raise CollectorError(
                    f"Cassandra rejected the query: {exc}",
                    where=f"{self.keyspace}.{self.table}",
                    fix="check keyspace, table and column names in collect.sources.sonar",
                ) from exc
        return self._statement

    def _rows(self, host: str, since: float, until: float) -> list:
        return list(
            self.session.execute(self._statement_for_session(), (host, _datetime(since), _datetime(until)))
        )

    def _samples(self, host: str, rows: list) -> list[Sample]:
        samples = []
        horizon = self.rates.clock() + self.rates.max_future
        timed = []
        for row in rows:
            try:
                t = _seconds(getattr(row, self.time_column))
            except (TypeError, ValueError, OverflowError):
                t = math.nan
            # A row stamped in the future must not move last_seen there: every later query
            # ("time > last_seen") would come back empty until a restart.
            if not math.isfinite(t) or t > horizon:
                self.rejected_rows += 1
                if self.rejected_rows == 1:
                    log.warning("sonar: %s: row with time %r skipped (not a time, or in the future)", host, t)
                continue
            timed.append((t, row))
        for t, row in sorted(timed, key=lambda pair: pair[0]):
            self.last_seen[host] = max(self.last_seen.get(host, t), t)
            if self.metrics:
                pairs = [(name, getattr(row, column)) for column, name in self.metrics.items()]
            else:
                pairs = [(getattr(row, self.metric_column), getattr(row, self.value_column))]
            for ldms_name, value in pairs:
                if value is None:
                    continue
                name = normalize(str(ldms_name))
                if name.is_rate or not name.known:
                    try:
                        number = float(value)
                    except (TypeError, ValueError, OverflowError):
                        number = math.nan
                    if math.isfinite(number):
                        samples.append(Sample(t, host, self.name, name.metric, number * name.scale))
                    else:
                        self.bad_values += 1
                    continue
                if isinstance(value, str):  # a text column: the tracker refuses it, counted there
                    self.bad_values += 1
                    continue
                rate = self.rates.update((host, ldms_name), t, value)
                if rate is not None:
                    samples.append(Sample(t, host, self.name, name.metric, rate * name.scale))
        return samples

    def fetch(self, start: float, end: float, hosts: Sequence[str] | None = None) -> list[Sample]:
        """Samples with ``start < ts <= end`` for ``hosts`` (default: the configured ones).

        For back-filling the feature store (training windows). Counter rates start after
        each host's first row in the range.
        """
        samples = []
        for host in hosts or self.hosts:
            samples += self._samples(host, self._rows(host, start, end))
        return samples

    def collect(self, now: float | None = None) -> list[Sample]:
        """Rows since the last one seen per host (first time: the last ``lookback`` seconds)."""
        now = time.time() if now is None else now
        samples, errors = [], []
        for host in self.hosts:
            since = self.last_seen.get(host, now - self.lookback)
            try:
                rows = self._rows(host, since, now)
            except (CollectorError, BackendUnavailableError):
                raise
            except Exception as exc:  # a timeout on one partition must not stop the others
                errors.append(f"{host}: {exc}")
                continue
            samples += self._samples(host, rows)
        for error in errors:
            log.warning("sonar: %s", error)
        if errors and len(errors) == len(self.hosts):
            raise CollectorError(
                f"every Cassandra query failed ({errors[0]})",
                where=f"{self.contact_points}:{self.port} {self.keyspace}.{self.table}",
                fix="check that Cassandra is up and reachable",
            )
        return samples
