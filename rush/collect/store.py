"""The feature store: samples in, the model's window features out.

Embedded default: **SQLite** (standard library, WAL mode). It needs no server and no
extra package, survives a daemon crash without losing committed samples, and lets the
collector service write while the daemon reads. A columnar engine (DuckDB) would scan
faster, but the query that matters here is one time window and SQLite answers it within
the target with a covering index on (time, metric, host); see
``benchmarks/bench_feature_store.py``.

Schema: ``hosts(id, name)``, ``metrics(id, name)`` and
``samples(ts, metric_id, host_id, value)``; names are stored once.

``window_features(hosts, start, end, sources)`` is the one query used for training and
live prediction alike. For each metric: the mean of each node's samples in
[start, end), then over those per-node means ``min_<metric>``, ``max_<metric>`` and
``mean_<metric>`` (over all nodes when ``hosts`` is None, else over the job's nodes).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from rush.collect.base import Sample
from rush.errors import CollectorError

SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS hosts (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS metrics (id INTEGER PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL,
                                    UNIQUE (name, source));
CREATE TABLE IF NOT EXISTS samples (ts REAL NOT NULL, metric_id INTEGER NOT NULL, host_id INTEGER NOT NULL,
                                    value REAL NOT NULL);
CREATE INDEX IF NOT EXISTS samples_window ON samples (ts, metric_id, host_id, value);
"""


class FeatureStore:
    def __init__(self, path: str | Path, retention: float | None = None) -> None:
        self.path = Path(path)
        self.retention = retention
        try:
            self.db = sqlite3.connect(str(self.path), timeout=30)
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise CollectorError(
                f"cannot open the feature store: {exc}",
                where=str(self.path),
                fix="check the path and permissions, or move a corrupt file away",
            ) from exc
        self._hosts: dict[str, int] = dict(self.db.execute("SELECT name, id FROM hosts"))
        self._metrics: dict[tuple[str, str], int] = {
            (name, source): i for i, name, source in self.db.execute("SELECT id, name, source FROM metrics")
        }

    def _id(self, table: str, cache: dict, key, values: tuple) -> int:
        if key not in cache:
            columns = "name" if table == "hosts" else "name, source"
            marks = ", ".join("?" * len(values))
            self.db.execute(f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({marks})", values)
            where = "name = ?" if table == "hosts" else "name = ? AND source = ?"
            cache[key] = self.db.execute(f"SELECT id FROM {table} WHERE {where}", values).fetchone()[0]
        return cache[key]

    def insert(self, samples: Iterable[Sample]) -> int:
        rows = []
        for s in samples:
            host = self._id("hosts", self._hosts, s.host, (s.host,))
            metric = self._id("metrics", self._metrics, (s.metric, s.source), (s.metric, s.source))
            rows.append((float(s.timestamp), metric, host, float(s.value)))
        with self.db:
            self.db.executemany(
                "INSERT INTO samples (ts, metric_id, host_id, value) VALUES (?, ?, ?, ?)", rows
            )
        return len(rows)

    def prune(self, older_than: float | None = None) -> int:
        """Delete samples older than ``older_than`` (default: now - retention)."""
        if older_than is None:
            if self.retention is None:
                return 0
            older_than = time.time() - self.retention
        with self.db:
            return self.db.execute("DELETE FROM samples WHERE ts < ?", (older_than,)).rowcount

    def _filters(self, hosts: Sequence[str] | None, sources: Sequence[str] | None) -> tuple[str, list]:
        clauses, args = [], []
        if hosts is not None:
            ids = [self._hosts[h] for h in hosts if h in self._hosts]
            clauses.append(f"host_id IN ({', '.join('?' * len(ids))})" if ids else "0")
            args += ids
        if sources is not None:
            ids = [i for (_, source), i in self._metrics.items() if source in set(sources)]
            clauses.append(f"metric_id IN ({', '.join('?' * len(ids))})" if ids else "0")
            args += ids
        return "".join(f" AND {c}" for c in clauses), args

    def window_features(
        self,
        hosts: Sequence[str] | None,
        start: float,
        end: float,
        sources: Sequence[str] | None = None,
    ) -> dict[str, float]:
        """``{min_,max_,mean_}<metric>`` over the per-node means in [start, end)."""
        extra, args = self._filters(hosts, sources)
        query = (
            "SELECT metric_id, MIN(m), MAX(m), AVG(m) FROM ("
            "  SELECT metric_id, host_id, AVG(value) AS m FROM samples"
            f"  WHERE ts >= ? AND ts < ?{extra} GROUP BY metric_id, host_id"
            ") GROUP BY metric_id"
        )
        names = {i: name for (name, _), i in self._metrics.items()}
        features: dict[str, float] = {}
        for metric_id, lo, hi, mean in self.db.execute(query, [start, end, *args]):
            name = names[metric_id]
            features[f"min_{name}"] = lo
            features[f"max_{name}"] = hi
            features[f"mean_{name}"] = mean
        return features

    def samples(
        self,
        hosts: Sequence[str] | None = None,
        start: float = float("-inf"),
        end: float = float("inf"),
        sources: Sequence[str] | None = None,
    ) -> list[Sample]:
        """Raw samples in [start, end), oldest first."""
        extra, args = self._filters(hosts, sources)
        host_names = {i: h for h, i in self._hosts.items()}
        metric_names = {i: key for key, i in self._metrics.items()}
        rows = self.db.execute(
            f"SELECT ts, metric_id, host_id, value FROM samples WHERE ts >= ? AND ts < ?{extra} ORDER BY ts",
            [start, end, *args],
        )
        return [
            Sample(ts, host_names[h], metric_names[m][1], metric_names[m][0], value)
            for ts, m, h, value in rows
        ]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> FeatureStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
