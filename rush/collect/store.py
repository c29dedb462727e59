"""The feature store: samples in, the model's window features out.

Engine: **SQLite** (standard library, WAL mode). It needs no server and no extra package,
keeps every committed sample across a crash, and lets the collector service write while
the daemon and the trainer read. DuckDB would scan faster but is another dependency, and
with the layout below SQLite meets the target (a 5-minute window over 3,000 nodes x 100
metrics in well under 1 s; ``benchmarks/bench_feature_store.py`` prints the figures).

Layout. The logical record is :class:`~rush.collect.base.Sample` (timestamp, host, source,
metric, value), but a collector reads all its metrics of one host at (about) one instant,
so samples are stored one *reading* per row::

    hosts(id, name)   metrics(id, name)   sources(id, name)
    metric_sets(id, source_id, metric_ids BLOB int32[])        -- the columns of a reading
    readings(ts, host_id, set_id, vals BLOB float64[], offsets BLOB float64[] | NULL)
    UNIQUE INDEX readings_window (ts, host_id, set_id)

Samples of one host and source less than ``READING_SPREAD`` (1 s) apart form one reading;
``offsets`` keeps each value's exact time when they differ (NULL in the common case), so
window bounds stay exact. Re-inserting the same reading replaces it, so re-ingesting a
file is idempotent. ``prune`` deletes whole readings (by their first time).

Measured with the benchmark (3,000 nodes x 100 metrics, 1.5 M samples in the window, on
a shared 2-core machine): one row per sample with a covering index on
(ts, metric_id, host_id, value) took ~1.3 s per window query (SQLite sorts 1.5 M rows for
the GROUP BY; fetching them into numpy instead took 2.4 s) and 180 MiB for 3 M samples;
one row per reading answers in 0.1-0.3 s (numpy aggregates the decoded blocks) and takes
36 MiB. Readings whose metrics come ms apart (Prometheus instant queries) cost ~0.3 s.

Window features (the one query used for training and live prediction alike)::

    window_features(hosts, start, end, sources=None)

For each metric: the mean of each node's samples with ``start <= ts < end`` (a node's
mean rate over the window), then over those per-node means ``min_<metric>``,
``max_<metric>`` and ``mean_<metric>`` — over all nodes that reported the metric when
``hosts`` is None, else over the given (job's) nodes. min/max are therefore over nodes,
not over single samples: the variability model asks "how loaded is the busiest/idlest
node", and one noisy sample should not decide it. The same metric name from two sources
(e.g. IB bytes from sysfs and from LDMS) is pooled. The mean adds the nodes' means in host id
order (:func:`over_nodes`), so many node sets of one window read once (``node_sums``, then
``over_nodes`` per set: :class:`rush.models.variability.features.WindowReader`) give exactly
what ``window_features`` gives for each.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from operator import itemgetter
from pathlib import Path

import numpy as np

from rush.collect.base import Sample
from rush.errors import CollectorError

log = logging.getLogger(__name__)
SCHEMA_VERSION = 3
READING_SPREAD = 1.0  # seconds: samples of one host and source this close form one reading
IDS = np.dtype("<i4")
VALUES = np.dtype("<f8")
SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS hosts (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS metrics (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS sources (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS metric_sets (id INTEGER PRIMARY KEY, source_id INTEGER NOT NULL,
                                        metric_ids BLOB NOT NULL, UNIQUE (source_id, metric_ids));
CREATE TABLE IF NOT EXISTS readings (ts REAL NOT NULL, host_id INTEGER NOT NULL,
                                     set_id INTEGER NOT NULL, vals BLOB NOT NULL, offsets BLOB);
CREATE UNIQUE INDEX IF NOT EXISTS readings_window ON readings (ts, host_id, set_id);
"""


def _readings(
    items: list[tuple[float, str, float]],
) -> Iterable[tuple[float, dict[str, tuple[float, float]]]]:
    """Group one host's and source's samples into readings: (first time, {metric: (t, value)})."""
    items.sort(key=lambda item: item[0])
    first, values = None, {}
    for t, metric, value in items:
        if first is not None and (
            t - first >= READING_SPREAD or (metric in values and values[metric][0] != t)
        ):
            yield first, values
            first, values = None, {}
        if first is None:
            first = t
        values[metric] = (t, value)  # the same metric and time twice: the last value wins
    if first is not None:
        yield first, values


def over_nodes(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(reported, min, max, mean) over the nodes axis (-2) of per-node sums and counts.

    ``reported`` counts the nodes with a value of each metric; where it is 0 the min is inf,
    the max -inf and the mean NaN. The nodes are summed one after another in their order: the
    same answer for one node set alone or stacked with others, whatever the number of metrics
    (numpy's ``sum`` changes its order with the array's shape)."""
    return reduce_nodes(*per_node(sums, counts))


def per_node(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """The elementwise step of :func:`over_nodes`: (has a value, mean (0 without), mean or
    inf, mean or -inf) of each node and metric; node sets may then be gathered from them."""
    has = counts > 0
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=has)
    return has, means, np.where(has, means, np.inf), np.where(has, means, -np.inf)


def reduce_nodes(
    has: np.ndarray, means: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The reduction step of :func:`over_nodes` over axis -2 of :func:`per_node`'s arrays."""
    if means.shape[-2] > 64:  # few sets of many nodes: one call each (accumulate: in order)
        lo, hi, reported = low.min(axis=-2), high.max(axis=-2), has.sum(axis=-2)
        total = np.add.accumulate(means, axis=-2)[..., -1, :]
    else:  # many sets of few nodes: node by node over all sets (strided reductions are slow)
        lo, hi = low[..., 0, :].copy(), high[..., 0, :].copy()
        reported, total = has[..., 0, :].astype(np.int64), means[..., 0, :].copy()
        for node in range(1, means.shape[-2]):
            np.minimum(lo, low[..., node, :], out=lo)
            np.maximum(hi, high[..., node, :], out=hi)
            reported += has[..., node, :]
            total += means[..., node, :]
    mean = np.divide(total, reported, out=np.full_like(total, np.nan), where=reported > 0)
    return reported, lo, hi, mean


class FeatureStore:
    """Samples of all collectors in one SQLite file; ``retention`` in seconds (None: keep all)."""

    def __init__(self, path: str | Path, retention: float | None = None) -> None:
        if retention is not None and not (0 < retention < math.inf):  # also refuses NaN
            # A retention <= 0 would prune every reading as soon as it is written.
            raise CollectorError(
                f"feature store retention must be > 0 seconds, not {retention!r}",
                where="collect.retention",
                fix='e.g. "14d"',
            )
        self.path = Path(path)
        self.retention = retention
        self._lock = threading.Lock()  # the collector service may insert from a worker thread
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if tables and version != SCHEMA_VERSION:
                raise CollectorError(
                    f"feature store has schema version {version}, this rush writes {SCHEMA_VERSION}",
                    where=str(self.path),
                    fix="move the old file away (rush recreates it), or point the store to a new path",
                )
            self.db.executescript(SCHEMA + f"PRAGMA user_version={SCHEMA_VERSION};")
        except sqlite3.DatabaseError as exc:
            raise CollectorError(
                f"cannot open the feature store: {exc}",
                where=str(self.path),
                fix="check the path and permissions, or move a corrupt file away",
            ) from exc
        self._load_names()

    # -- names ------------------------------------------------------------------------------
    def _load_names(self) -> None:
        self._hosts: dict[str, int] = dict(self.db.execute("SELECT name, id FROM hosts"))
        self._metrics: dict[str, int] = dict(self.db.execute("SELECT name, id FROM metrics"))
        self._sources: dict[str, int] = dict(self.db.execute("SELECT name, id FROM sources"))
        self._sets: dict[tuple[int, bytes], int] = {}
        self._set_info: dict[int, tuple[int, np.ndarray]] = {}
        for set_id, source_id, blob in self.db.execute("SELECT id, source_id, metric_ids FROM metric_sets"):
            self._sets[(source_id, bytes(blob))] = set_id
            self._set_info[set_id] = (source_id, np.frombuffer(blob, IDS))

    def _name_id(self, table: str, cache: dict[str, int], name: str) -> int:
        if name not in cache:
            self.db.execute(f"INSERT OR IGNORE INTO {table} (name) VALUES (?)", (name,))
            cache[name] = self.db.execute(f"SELECT id FROM {table} WHERE name = ?", (name,)).fetchone()[0]
        return cache[name]

    def _set_id(self, source_id: int, metric_ids: list[int]) -> int:
        blob = np.asarray(metric_ids, IDS).tobytes()
        key = (source_id, blob)
        if key not in self._sets:
            self.db.execute(
                "INSERT OR IGNORE INTO metric_sets (source_id, metric_ids) VALUES (?, ?)", (source_id, blob)
            )
            set_id = self.db.execute(
                "SELECT id FROM metric_sets WHERE source_id = ? AND metric_ids = ?", (source_id, blob)
            ).fetchone()[0]
            self._sets[key] = set_id
            self._set_info[set_id] = (source_id, np.frombuffer(blob, IDS))
        return self._sets[key]

    # -- writing ----------------------------------------------------------------------------
    def insert(self, samples: Iterable[Sample]) -> int:
        """Store samples; returns how many were stored (non-finite values are dropped, logged).

        Samples of one host and source less than ``READING_SPREAD`` s apart form one
        reading (row); each value keeps its exact timestamp (offsets from the row's).
        """
        by_origin: dict[tuple[str, str], list[tuple[float, str, float]]] = {}
        dropped = 0
        for s in samples:
            value = float(s.value)
            if not math.isfinite(value):
                dropped += 1
                continue
            by_origin.setdefault((s.host, s.source), []).append((float(s.timestamp), s.metric, value))
        if dropped:
            log.warning("feature store: %d non-finite sample value(s) dropped", dropped)
        rows = []
        stored = 0
        with self._lock, self.db:
            for (host, source), items in by_origin.items():
                host_id = self._name_id("hosts", self._hosts, host)
                source_id = self._name_id("sources", self._sources, source)
                for first, values in _readings(items):
                    metric_ids = [self._name_id("metrics", self._metrics, m) for m in values]
                    times = np.fromiter((t for t, _ in values.values()), VALUES, len(values))
                    offsets = None if not np.any(times != first) else (times - first).astype(VALUES).tobytes()
                    rows.append(
                        (
                            first,
                            host_id,
                            self._set_id(source_id, metric_ids),
                            np.fromiter((v for _, v in values.values()), VALUES, len(values)).tobytes(),
                            offsets,
                        )
                    )
                    stored += len(values)
            self.db.executemany(
                "INSERT OR REPLACE INTO readings (ts, host_id, set_id, vals, offsets) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
        return stored

    def prune(self, older_than: float | None = None) -> int:
        """Delete samples with ``ts < older_than`` (default: now - retention); returns how many."""
        if older_than is None:
            if self.retention is None:
                return 0
            older_than = time.time() - self.retention
        with self._lock, self.db:
            count = self.db.execute(
                "SELECT COALESCE(SUM(length(vals)), 0) FROM readings WHERE ts < ?", (older_than,)
            ).fetchone()[0]
            self.db.execute("DELETE FROM readings WHERE ts < ?", (older_than,))
        return int(count) // VALUES.itemsize

    # -- reading ----------------------------------------------------------------------------
    def _rows(
        self,
        hosts: Sequence[str] | None,
        start: float,
        end: float,
        sources: Sequence[str] | None,
        order: str = "ts, rowid",
        check_names: bool = True,
    ) -> list[tuple[float, int, int, bytes, bytes | None]]:
        with self._lock:
            self._refresh_if_needed()
            # A reading starting up to READING_SPREAD before ``start`` may hold later values,
            # only if its values spread out (offsets); one without has them all before start.
            clauses = ["ts > ?", "ts < ?", "(ts >= ? OR offsets IS NOT NULL)"]
            args = [start - READING_SPREAD, end, start]
            if hosts is not None:
                ids = sorted({self._hosts[h] for h in hosts if h in self._hosts})
                if not ids:
                    return []
                clauses.append(f"host_id IN ({', '.join('?' * len(ids))})")
                args += ids
            if sources is not None:
                wanted = {self._sources[s] for s in sources if s in self._sources}
                ids = sorted(i for i, (source_id, _) in self._set_info.items() if source_id in wanted)
                if not ids:
                    return []
                clauses.append(f"set_id IN ({', '.join('?' * len(ids))})")
                args += ids
            where = " AND ".join(clauses)
            rows = self.db.execute(
                f"SELECT ts, host_id, set_id, vals, offsets FROM readings WHERE {where} ORDER BY {order}",
                args,
            ).fetchall()
            top_host = max(self._hosts.values(), default=0)
            if (
                check_names
                and rows
                and (
                    max(map(itemgetter(1), rows)) > top_host
                    or not set(map(itemgetter(2), rows)) <= self._set_info.keys()
                )
            ):
                self._load_names()  # written by another process after the refresh above
            return rows

    def _refresh_if_needed(self) -> None:
        # Another process (the collector service) may have added names since we loaded them.
        hosts, sets = self.db.execute(
            "SELECT (SELECT COUNT(*) FROM hosts), (SELECT COUNT(*) FROM metric_sets)"
        ).fetchone()
        if hosts != len(self._hosts) or sets != len(self._set_info):
            self._load_names()

    def _node_means(
        self, hosts: Sequence[str] | None, start: float, end: float, sources: Sequence[str] | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(host ids, metric ids, sums, counts) with sums/counts shaped (hosts, metrics)."""
        # The index's order, no sort: a host's rows of one metric set are in time order either
        # way (one reading per time), and that is the only order the sums depend on.
        rows = self._rows(hosts, start, end, sources, order="ts, host_id, set_id", check_names=False)
        empty = (np.empty(0, int), np.empty(0, int), np.empty((0, 0)), np.empty((0, 0)))
        if not rows:
            return empty
        # Columns of the fetched rows in one pass each (C-level), not one generator per column.
        row_ts, host_col, set_col, vals, offsets = zip(*rows, strict=True)
        # Host ids are small integers: rank them by counting, not by sorting.
        n = len(rows)
        host_of_row = np.fromiter(host_col, np.int64, n)
        host_ids = np.flatnonzero(np.bincount(host_of_row))
        rank = np.zeros(host_ids[-1] + 1, np.int64)
        rank[host_ids] = np.arange(len(host_ids))
        host_index = rank[host_of_row]
        set_ids = np.fromiter(set_col, np.int64, n)
        row_ts = np.fromiter(row_ts, VALUES, n)
        if offsets.count(None) == n:  # the common case: no reading spread out
            spread = np.zeros(n, bool)
        else:
            spread = np.fromiter((o is not None for o in offsets), bool, n)
        present = np.unique(set_ids)
        if (
            host_ids[-1] > max(self._hosts.values(), default=0)
            or not set(present.tolist()) <= self._set_info.keys()
        ):
            with self._lock:
                self._load_names()  # written by another process after _rows' refresh
        metric_ids = np.unique(np.concatenate([self._set_info[s][1] for s in present]))
        sums = np.zeros((len(host_ids), len(metric_ids)))
        counts = np.zeros((len(host_ids), len(metric_ids)))
        for set_id in present:
            members = np.flatnonzero(set_ids == set_id)
            columns = np.searchsorted(metric_ids, self._set_info[set_id][1])
            picked = itemgetter(*members.tolist())(vals) if len(members) > 1 else (vals[members[0]],)
            block = np.frombuffer(b"".join(picked), VALUES).reshape(len(members), -1)
            # Exact time of every value: the row's, plus its offset when the reading spread out.
            row_time = row_ts[members]
            if not spread[members].any():
                inside = np.broadcast_to(((row_time >= start) & (row_time < end))[:, None], block.shape)
            else:
                times = np.repeat(row_time[:, None], block.shape[1], axis=1)
                for k in np.flatnonzero(spread[members]).tolist():
                    times[k] += np.frombuffer(offsets[members[k]], VALUES)
                inside = (times >= start) & (times < end)
            weights, hits = np.where(inside, block, 0.0), inside.astype(float)
            where = host_index[members]
            for c, column in enumerate(columns):  # bincount: far faster than np.add.at
                sums[:, column] += np.bincount(where, weights=weights[:, c], minlength=len(host_ids))
                counts[:, column] += np.bincount(where, weights=hits[:, c], minlength=len(host_ids))
        keep = counts.any(axis=0)  # metrics whose only values fell just before the window
        if not keep.any():
            return empty
        return host_ids, metric_ids[keep], sums[:, keep], counts[:, keep]

    def window_features(
        self,
        hosts: Sequence[str] | None,
        start: float,
        end: float,
        sources: Sequence[str] | None = None,
    ) -> dict[str, float]:
        """``min_/max_/mean_<metric>`` over the per-node means in ``[start, end)`` (see module doc).

        Unknown hosts or sources simply contribute nothing; no data gives ``{}``.
        """
        _, metric_ids, sums, counts = self._node_means(hosts, start, end, sources)
        if not len(metric_ids):
            return {}
        _, lo, hi, mean = over_nodes(sums, counts)
        names = {i: name for name, i in self._metrics.items()}
        features: dict[str, float] = {}
        for k in sorted(range(len(metric_ids)), key=lambda k: names[int(metric_ids[k])]):
            name = names[int(metric_ids[k])]
            features[f"min_{name}"] = float(lo[k])
            features[f"max_{name}"] = float(hi[k])
            features[f"mean_{name}"] = float(mean[k])
        return features

    def node_sums(
        self,
        hosts: Sequence[str] | None,
        start: float,
        end: float,
        sources: Sequence[str] | None = None,
    ) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """(host names, metric names, sums, counts (hosts, metrics)) of the values in [start, end).

        The raw step of window_features, for callers that aggregate many node sets of one window
        (:func:`over_nodes` on a host's rows gives what window_features gives for those hosts:
        a host's sums do not depend on which other hosts were read with it)."""
        host_ids, metric_ids, sums, counts = self._node_means(hosts, start, end, sources)
        host_names = {i: h for h, i in self._hosts.items()}
        metric_names = {i: m for m, i in self._metrics.items()}
        return (
            [host_names[int(h)] for h in host_ids],
            [metric_names[int(m)] for m in metric_ids],
            sums,
            counts,
        )

    def host_ids(self) -> dict[str, int]:
        """Host name -> id (window_features orders a window's nodes by id)."""
        with self._lock:
            self._refresh_if_needed()
            return dict(self._hosts)

    def version(self) -> tuple[int, int]:
        """Changes whenever the store's content may have: another connection committed
        (``PRAGMA data_version``) or this one wrote (``total_changes``)."""
        with self._lock:
            return int(self.db.execute("PRAGMA data_version").fetchone()[0]), self.db.total_changes

    def readings_between(self, bands: Sequence[tuple[float, float]]) -> bool:
        """Whether a value has a time in one of the [lo, hi) ``bands``."""
        if not bands:
            return False
        # A reading's values lie at ts, or in [ts, ts + READING_SPREAD) when it has offsets.
        at_ts = " OR ".join("(ts >= ? AND ts < ?)" for _ in bands)
        spread = " OR ".join("(ts > ? AND ts < ?)" for _ in bands)
        with self._lock:
            found = self.db.execute(
                f"SELECT EXISTS (SELECT 1 FROM readings WHERE {at_ts})", [x for band in bands for x in band]
            ).fetchone()[0]
            if found:
                return True
            spread_rows = self.db.execute(
                f"SELECT ts, offsets FROM readings WHERE offsets IS NOT NULL AND ({spread})",
                [x for lo, hi in bands for x in (lo - READING_SPREAD, hi)],
            ).fetchall()
        for ts, offsets in spread_rows:
            times = ts + np.frombuffer(offsets, VALUES)
            if any(((times >= lo) & (times < hi)).any() for lo, hi in bands):
                return True
        return False

    def node_means(
        self,
        hosts: Sequence[str] | None,
        start: float,
        end: float,
        sources: Sequence[str] | None = None,
    ) -> dict[str, dict[str, float]]:
        """``{host: {metric: mean over [start, end)}}`` — the per-node step of window_features."""
        host_ids, metric_ids, sums, counts = self._node_means(hosts, start, end, sources)
        host_names = {i: h for h, i in self._hosts.items()}
        metric_names = {i: m for m, i in self._metrics.items()}
        return {
            host_names[int(h)]: {
                metric_names[int(m)]: float(sums[a, b] / counts[a, b])
                for b, m in enumerate(metric_ids)
                if counts[a, b] > 0
            }
            for a, h in enumerate(host_ids)
        }

    def samples(
        self,
        hosts: Sequence[str] | None = None,
        start: float = float("-inf"),
        end: float = float("inf"),
        sources: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
    ) -> list[Sample]:
        """Raw samples with ``start <= ts < end``, oldest first."""
        rows = self._rows(hosts, start, end, sources)
        host_names = {i: h for h, i in self._hosts.items()}
        metric_names = {i: m for m, i in self._metrics.items()}
        source_names = {i: s for s, i in self._sources.items()}
        wanted = None if metrics is None else set(metrics)
        out: list[Sample] = []
        for ts, host_id, set_id, blob, offsets in rows:
            source_id, ids = self._set_info[set_id]
            host, source = host_names[host_id], source_names[source_id]
            values = np.frombuffer(blob, VALUES).tolist()
            times = [ts] * len(values) if offsets is None else (ts + np.frombuffer(offsets, VALUES)).tolist()
            for metric_id, t, value in zip(ids.tolist(), times, values, strict=True):
                metric = metric_names[metric_id]
                if (wanted is None or metric in wanted) and start <= t < end:
                    out.append(Sample(t, host, source, metric, value))
        out.sort(key=lambda s: s.timestamp)  # stable: a reading's values keep their order
        return out

    def size_bytes(self) -> int:
        """Bytes on disk (database plus write-ahead log)."""
        wal = Path(str(self.path) + "-wal")
        return sum(p.stat().st_size for p in (self.path, wal) if p.exists())

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> FeatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
