"""A fake Cassandra session answering as Sonar's tables do (Cassandra cannot run here)."""

from __future__ import annotations

import re
from collections import namedtuple
from datetime import datetime, timedelta


class FakeSession:
    """Rows of one table, partitioned by host and clustered by time (see module docstring)."""

    def __init__(self, columns: list[str], rows: list[tuple], fail_hosts: tuple[str, ...] = ()) -> None:
        self.Row = namedtuple("Row", columns)
        self.rows = [self.Row(*r) for r in rows]
        self.fail_hosts = fail_hosts
        self.prepared: list[str] = []
        self.executed: list[tuple] = []

    def prepare(self, query: str) -> PreparedStatement:
        match = re.fullmatch(
            r"SELECT (.+) FROM (\w+)\.(\w+) WHERE (\w+) = \? AND (\w+) > \? AND (\w+) <= \?", query
        )
        if match is None or match.group(3) != "metrics":
            raise RuntimeError(f"InvalidRequest: unconfigured table or bad query: {query}")
        self.prepared.append(query)
        return PreparedStatement(query)

    def execute(self, statement: PreparedStatement, params: tuple) -> list:
        assert isinstance(statement, PreparedStatement), "the collector must use the prepared statement"
        host, since, until = params
        assert isinstance(since, datetime) and since.tzinfo is None  # naive UTC, as the driver wants
        if host in self.fail_hosts:
            raise TimeoutError(f"OperationTimedOut: partition {host}")
        self.executed.append(params)
        selected = re.match(r"SELECT (.+) FROM", statement.query_string).group(1).split(", ")
        host_col, time_col = re.search(r"WHERE (\w+) = \? AND (\w+) >", statement.query_string).groups()
        Out = namedtuple("Row", selected)
        return [
            Out(*(getattr(r, c) for c in selected))
            for r in self.rows
            if getattr(r, host_col) == host and since < getattr(r, time_col) <= until
        ]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


T0 = datetime(2023, 11, 14, 22, 13, 20)  # 1700000000 UTC


class PreparedStatement:
    def __init__(self, query: str) -> None:
        self.query_string = query
