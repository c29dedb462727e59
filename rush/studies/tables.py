"""Study result tables: the same rows as ``<name>.csv`` (full precision) and ``<name>.md``
(Markdown, rounded for reading), as the study folders under ``sim/`` commit them."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path


def markdown_lines(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines: the header, the rule, one line per row of ready-made cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def cell(value: object, missing: str = "-") -> str:
    """A value as a Markdown cell: floats to three decimals below 100, whole numbers above."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def write_table(
    out: Path,
    name: str,
    rows: Sequence[Mapping],
    columns: Sequence[str] | None = None,
    *,
    missing: str = "-",
) -> None:
    """Write ``rows`` to ``out/<name>.csv`` and ``out/<name>.md``.

    ``columns`` picks and orders the columns (the rows' other keys are left out); without it
    the columns are the first row's keys, and a later row with another key is an error.
    ``missing`` is the Markdown cell of a None (the CSV leaves it empty).
    """
    names = list(rows[0]) if columns is None else list(columns)
    with open(out / f"{name}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=names, extrasaction="raise" if columns is None else "ignore")
        writer.writeheader()
        writer.writerows(rows)
    body = ([cell(row.get(c), missing) for c in names] for row in rows)
    (out / f"{name}.md").write_text("\n".join(markdown_lines(names, body)) + "\n")


def csv_value(text: str) -> object:
    """A CSV cell as :func:`write_table` (or a study's CSV writer) wrote it: empty is None,
    True/False bools, numbers their int or float, any other text itself."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def rows_not_rerun(path: Path, traces: Sequence[str], numbers: bool = False) -> list[dict]:
    """The committed rows of ``path`` (a table's CSV) whose trace this run does not redo, so a
    study run on some traces keeps the others' rows; none when the table does not exist yet.
    ``numbers``: the cells read back as numbers (for a table of raw values, whose Markdown
    :func:`cell` rounds; a table of ready-made strings keeps them as they are)."""
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["trace"] not in traces]
    if numbers:
        rows = [{k: csv_value(v) for k, v in r.items()} for r in rows]
    return rows


def in_trace_order(rows: list[dict], traces: Sequence[str]) -> list[dict]:
    """``rows`` sorted by their trace's place in ``traces`` (others last, in their order)."""
    place = {t: k for k, t in enumerate(traces)}
    return sorted(rows, key=lambda r: place.get(r["trace"], len(place)))
