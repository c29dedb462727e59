"""The tidy CSV table of a sweep, written append-safe, and its JSON description.

One line per result row; each cell's rows are appended with one ``write`` on an ``O_APPEND``
descriptor, so an interrupted sweep leaves whole lines (a line cut by a crash lacks its
newline and is dropped on resume, with the rest of its cell's rows: ``part``/``parts`` say
whether a cell's rows are all there). Values never contain line breaks (they are written as
``\\n``), so one physical line is one row. The header is the union of the columns seen; a
row with a new column rewrites the file under the wider header (to a temporary file renamed
over the old one, so the table is whole at every moment).

Types: numbers are written as Python writes them (``repr`` of floats round-trips), None as an
empty field, lists and dicts as JSON. Reading back (resume) turns numeric-looking text into
numbers, ``True``/``False`` into booleans and JSON lists/dicts back; the cells' parameters are
not read back but taken from the cells themselves.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rush.errors import ConfigError
from rush.output_file import replace_file
from rush.studies.sweep.keys import ERROR, ERROR_TYPE, KEY, PART, PARTS

# A resumable table beyond this is not a sweep's output (and would be read into memory).
MAX_TABLE_BYTES = 4 << 30


def encode(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    text = str(value)
    return text.replace("\r", "\\r").replace("\n", "\\n")


def decode(text: str) -> Any:
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
        return value if math.isfinite(value) or text.lower() in ("nan", "inf", "-inf") else text
    except ValueError:
        pass
    if text[0] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def paths(out: Path) -> tuple[Path, Path]:
    """(table, description) for ``out``: a ``.csv`` file, else a directory."""
    out = Path(out)
    if out.suffix.lower() == ".csv":
        return out, out.with_suffix(".json")
    return out / "sweep.csv", out / "sweep.json"


def _lines(columns: list[str], rows: Iterable[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([encode(row.get(c)) for c in columns])
    return buffer.getvalue()


class Table:
    """The CSV table at ``path``; ``columns`` grows as rows bring new ones."""

    def __init__(self, path: Path, first_columns: list[str]) -> None:
        self.path = path
        self.columns: list[str] = list(first_columns)
        self._fd: int | None = None

    # -- resume --------------------------------------------------------------------------
    def load(self) -> list[dict]:
        """The whole rows already in the table (a torn last line is cut off the file)."""
        if not self.path.exists():
            return []
        if not self.path.is_file():
            raise ConfigError(
                "the sweep table is not a regular file", where=str(self.path), fix="use another --out"
            )
        size = self.path.stat().st_size
        if size > MAX_TABLE_BYTES:
            raise ConfigError(
                f"the sweep table is {size} bytes", where=str(self.path), fix="use another --out"
            )
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # the line in flight when the sweep stopped
            with self.path.open("r+b") as handle:
                handle.truncate(end)
            data = data[:end]
        if not data:
            return []
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(
                "the sweep table is not UTF-8 text", where=str(self.path), fix="use another --out"
            ) from None
        reader = csv.reader(io.StringIO(text))
        header = next(reader, [])
        if KEY not in header or PART not in header or PARTS not in header:
            raise ConfigError(
                "this CSV is not a rush sweep table (no key/part/parts columns)",
                where=str(self.path),
                fix="use another --out, or --no-resume to replace it",
            )
        wanted, self.columns = self.columns, list(header)
        for name in wanted:  # parameters new to this run
            if name not in self.columns:
                self._insert_column(name)
        rows = []
        for line in reader:
            if len(line) != len(header):
                continue  # not a whole row: recomputed
            rows.append({name: decode(value) for name, value in zip(header, line, strict=True)})
        if header != self.columns:
            self._rewrite(rows)
        return rows

    def keep(self, rows: list[dict]) -> None:
        """Replace the table's rows by ``rows`` (resume drops failed and torn cells)."""
        self._rewrite(rows)

    # -- writing -------------------------------------------------------------------------
    def start(self, fresh: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh or not self.path.exists() or self.path.stat().st_size == 0:
            self._replace(_lines(self.columns, [{c: c for c in self.columns}]))
        self._open()

    def _open(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def append(self, rows: list[dict]) -> None:
        """Append one cell's rows with one write (a new column rewrites the table first)."""
        new = [c for row in rows for c in row if c not in self.columns]
        if new:
            existing = self.read_rows()
            for name in dict.fromkeys(new):
                self._insert_column(name)
            self._rewrite(existing)
        assert self._fd is not None
        os.write(self._fd, _lines(self.columns, rows).encode("utf-8"))

    def _insert_column(self, name: str) -> None:
        # Result columns go before the bookkeeping ones, which stay last.
        tail = [PART, PARTS, ERROR_TYPE, ERROR]
        at = min((self.columns.index(c) for c in tail if c in self.columns), default=len(self.columns))
        self.columns.insert(at, name)

    def read_rows(self) -> list[dict]:
        text = self.path.read_text(encoding="utf-8")
        reader = csv.reader(io.StringIO(text))
        header = next(reader, [])
        return [dict(zip(header, line, strict=True)) for line in reader if len(line) == len(header)]

    def _rewrite(self, rows: list[dict]) -> None:
        # Raw strings from read_rows are written back as they were; decoded rows re-encode the same.
        self._replace(_lines(self.columns, [{c: c for c in self.columns}, *rows]))

    def _replace(self, text: str) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        replace_file(temporary, self.path)
        if self._fd is not None:
            os.close(self._fd)
            self._open()

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


def write_description(path: Path, description: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(description, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    replace_file(temporary, path)


def read_description(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8")[: 1 << 20])
    except (ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None
