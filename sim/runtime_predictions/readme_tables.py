"""The study README's tables against the committed results files they quote (round 27 audit).

A table of ``README.md`` that copies a results file (Table 6.6, the schedulers' parts, the
predictors' accuracy, the online columns, rush-Q's committed rows) is named here by a ``Claim``:
its section, the start of its header row, and for each README column the file column its figures
come from. ``audit()`` compares every such cell with the file, to the decimals the README shows
(bold, thousands separators, the published figures in brackets and "before → after" arrows are
read through). Run as a script it prints each mismatch, with the commit that last changed the
file, and the README tables whose section or caption names a results file but no claim covers.

    python sim/runtime_predictions/readme_tables.py      # exit 1 when a claimed cell is stale
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

STUDY = Path(__file__).resolve().parent
README = STUDY / "README.md"
RESULTS = STUDY / "results"

_SEPARATOR = re.compile(r"^\|[-:| ]+\|$")
# A figure: a signed number (thousands separated by commas) or a published one in brackets.
_TOKEN = re.compile(r"\[\d+\]|[-+]?\d[\d,]*(?:\.\d+)?")
_NAMES_RESULTS = re.compile(r"results/[^`\s;,)]+")


@dataclass(frozen=True)
class MarkdownTable:
    """One pipe table of a markdown file: where it starts, its section and caption, its cells."""

    line: int
    section: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Source:
    """Where a README figure comes from: ``column`` of ``results/<job set>/<file>``, in the row of
    the README row's trace (and job set) that also matches ``where``; ``index`` picks the figure of
    a cell holding several (after its last arrow, or before its first if ``before``), or -1 for all
    of them, each against the file cell's figure in the same place; the file's value is multiplied
    by ``scale``."""

    file: str
    column: str
    where: tuple[tuple[str, str], ...] = ()
    index: int = 0
    scale: float = 1.0
    before: bool = False


@dataclass(frozen=True)
class Claim:
    """A README table that quotes results files. ``job_set`` is fixed, or None: then read from a
    ``job set`` column, or from divider rows (``*full job set*``), published first. ``published``
    names the columns whose published figures (``23 [36]``) must equal the file cell's too.
    ``scheduler_names`` maps a README ``scheduler`` cell to the file's scheduler."""

    name: str
    section: str
    header: str
    job_set: str | None
    cells: Mapping[str, tuple[Source, ...]]
    published: tuple[str, ...] = ()
    scheduler_names: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Mismatch:
    """A README cell that is not the committed file's figure."""

    claim: str
    line: int
    job_set: str
    trace: str
    column: str
    readme: str
    committed: str
    file: str


def _plain(cell: str) -> str:
    """A cell without emphasis, with ASCII minus signs and no thin or no-break spaces."""
    text = cell.replace("**", "").replace("*", "").replace("\u2212", "-")
    return re.sub(r"[\u2009\u202f\u00a0]", " ", text).strip()


def markdown_tables(text: str) -> list[MarkdownTable]:
    """Every pipe table of ``text``, with the heading it sits under and the paragraph before it."""
    lines = text.split("\n")
    tables: list[MarkdownTable] = []
    section, i = "", 0
    while i < len(lines):
        if lines[i].startswith("#"):
            section = lines[i]
        if lines[i].startswith("|") and i + 1 < len(lines) and _SEPARATOR.match(lines[i + 1].strip()):
            end = i + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            before = i - 1
            while before >= 0 and not lines[before].strip():
                before -= 1
            caption_lines: list[str] = []
            while before >= 0 and lines[before].strip() and not lines[before].startswith(("|", "#")):
                caption_lines.insert(0, lines[before])
                before -= 1
            tables.append(
                MarkdownTable(
                    line=i + 1,
                    section=section,
                    caption=" ".join(caption_lines),
                    header=_cells(lines[i]),
                    rows=tuple(_cells(row) for row in lines[i + 2 : end]),
                )
            )
            i = end
            continue
        i += 1
    return tables


def _cells(row: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in row.strip().strip("|").split("|"))


def results_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a committed results table (its first pipe table), by column name."""
    table = markdown_tables(path.read_text())[0]
    return [dict(zip(table.header, row, strict=True)) for row in table.rows]


def figures(cell: str, before: bool = False) -> list[str]:
    """The figures of a cell after its last arrow (before its first if ``before``), in order, as
    written (``[36]`` kept bracketed)."""
    parts = _plain(cell).split("\u2192")
    return _TOKEN.findall(parts[0] if before else parts[-1])


def _value(token: str) -> float:
    return float(token.strip("[]").replace(",", "").lstrip("+"))


def _decimals(token: str) -> int:
    digits = token.strip("[]")
    return len(digits.split(".")[1]) if "." in digits else 0


def agrees(shown: str, committed: float) -> bool:
    """The README's figure is the committed value rounded to the decimals the README shows."""
    return abs(_value(shown) - committed) <= 0.5 * 10 ** -_decimals(shown) + 1e-9


def find_table(tables: list[MarkdownTable], claim: Claim) -> MarkdownTable:
    """The first table under the claim's section whose header row starts as the claim says."""
    for table in tables:
        header = "| " + " | ".join(_plain(cell) for cell in table.header) + " |"
        if table.section.startswith(claim.section) and header.startswith(claim.header):
            return table
    raise LookupError(f"README has no table {claim.header!r} under {claim.section!r} ({claim.name})")


def _job_sets(table: MarkdownTable, claim: Claim) -> list[tuple[str, dict[str, str]] | None]:
    """Each row's job set and cells by header; None for a divider row."""
    header = [_plain(cell) for cell in table.header]
    job_set = claim.job_set or "published"
    rows: list[tuple[str, dict[str, str]] | None] = []
    for row in table.rows:
        cells = dict(zip(header, row, strict=True))
        if all(not cell for cell in row[1:]):
            job_set = "full" if "full" in row[0] else "published"
            rows.append(None)
            continue
        rows.append((_plain(cells.get("job set", job_set)), cells))
    return rows


def _committed_row(claim: Claim, source: Source, key: tuple[str, str, str]) -> tuple[dict[str, str], Path]:
    job_set, trace, scheduler = key
    path = RESULTS / job_set / source.file
    wanted = dict(source.where)
    if scheduler:
        wanted["scheduler"] = claim.scheduler_names.get(scheduler, scheduler)
    matches = [
        row
        for row in results_rows(path)
        if row["trace"] == trace
        and row.get("job_set", job_set) == job_set
        and all(row.get(column) == value for column, value in wanted.items())
    ]
    if len(matches) != 1:
        raise LookupError(
            f"{path.relative_to(RESULTS.parent)}: {len(matches)} rows for {trace} {wanted} ({claim.name})"
        )
    return matches[0], path


def _shows(shown: list[str], committed: list[str], source: Source) -> bool:
    """The README's figures are the file cell's (one picked by ``index``, or all of them)."""
    if source.index < 0:
        return len(shown) == len(committed) and all(
            agrees(figure, _value(value) * source.scale)
            for figure, value in zip(shown, committed, strict=True)
        )
    return source.index < len(shown) and agrees(shown[source.index], _value(committed[0]) * source.scale)


def check_claim(claim: Claim, tables: list[MarkdownTable]) -> list[Mismatch]:
    """The claim's README cells that are not the committed figures."""
    table = find_table(tables, claim)
    found: list[Mismatch] = []
    for offset, entry in enumerate(_job_sets(table, claim)):
        if entry is None:
            continue
        job_set, cells = entry
        trace = _plain(cells["trace"])
        key = (job_set, trace, _plain(cells.get("scheduler", "")))
        for column, sources in claim.cells.items():
            for source in sources:
                shown = figures(cells[column], source.before)
                row, path = _committed_row(claim, source, key)
                committed = row[source.column]
                ok = _shows(shown, figures(committed), source)
                if ok and column in claim.published:
                    ok = shown[len(shown) - len(figures(committed)) + 1 :] == figures(committed)[1:]
                if not ok:
                    found.append(
                        Mismatch(
                            claim.name,
                            table.line + 2 + offset,
                            job_set,
                            trace,
                            column,
                            _plain(cells[column]),
                            committed,
                            str(path.relative_to(RESULTS.parent)),
                        )
                    )
    return found


def _table_6_6(*columns: str) -> dict[str, tuple[Source, ...]]:
    return {column: (Source("table_6_6.md", column),) for column in columns}


def _schedulers(names: Mapping[str, str]) -> dict[str, tuple[Source, ...]]:
    """README columns read from ``schedulers.md``'s improvement, one scheduler each."""
    return {
        column: (Source("schedulers.md", "improvement_over_easy_fcfs_pct", (("scheduler", scheduler),)),)
        for column, scheduler in names.items()
    }


def _accuracy(predictor: str) -> tuple[Source, ...]:
    where = (("predictor", predictor),)
    return (
        Source("accuracy.md", "median_absolute_error", where, 0),
        Source("accuracy.md", "underpredicted", where, 1, 100.0),
        Source("accuracy.md", "mean_accuracy", where, 2),
    )


def _rush_q(scheduler: str) -> tuple[Source, ...]:
    where = (("scheduler", scheduler),)
    return (
        Source("rush_q.md", "improvement_over_easy_fcfs_pct", where, 0),
        Source("rush_q.md", "false_small_kills", where, 1),
    )


def _single(scheduler: str, column: str = "improvement_over_easy_fcfs_pct") -> tuple[Source, ...]:
    """A single run's figure in ``rush_q.md`` (published set), by its scheduler."""
    return (Source("rush_q.md", column, (("scheduler", scheduler),)),)


def _starvation(column: str, scale: float = 1.0) -> tuple[Source, ...]:
    """A "before → after" cell of the starved-head rule's table."""
    return (
        Source("starvation_before.md", column, scale=scale, before=True),
        Source("starvation_after.md", column, scale=scale),
    )


def _paired(file: str, columns: Mapping[str, str]) -> dict[str, tuple[Source, ...]]:
    """README columns copied whole (every figure of the cell) from a paired-seeds table."""
    return {column: (Source(file, source, index=-1),) for column, source in columns.items()}


_SPF_CI = "SPF-CI (classifier)"
_H13A = "SPF-CI ranked on predictions"
_H17 = "SPF-CI ranked where confident"
_KILLS = _single(_SPF_CI, "fcfs_ci_kills")


def _hypothesis(section: str, header: str, columns: Mapping[str, str], kills: str) -> Claim:
    """A published-set table of single runs of record (rush_q.md), one scheduler a column."""
    cells = {column: _single(scheduler) for column, scheduler in columns.items()}
    return Claim(
        f"single runs of record: {section.removeprefix('### ')}",
        section,
        header,
        "published",
        cells | {kills: _KILLS},
    )


_SIX_SIX = ("EASY++", "Gaussier et al.", "FCFS-CI", "SPF-CI")
_PARTS = {
    "SJBF on requests": "EASY-FCFS+SJBF (requests)",
    "EASY++": "easy++",
    "EASY++, FCFS backfill": "easy++ (fcfs-backfill)",
    "EASY++, correct to request": "easy++ (correct-to-request)",
    "Gaussier": "gaussier",
    "Gaussier, FCFS backfill": "gaussier (fcfs-backfill)",
    "Gaussier, correct to request": "gaussier (correct-to-request)",
    "runtime-clairvoyant SJBF": "runtime-clairvoyant (SJBF)",
}
_BESIDE_6_6 = {
    name: _PARTS[name]
    for name in ("EASY++, correct to request", "Gaussier, correct to request", "runtime-clairvoyant SJBF")
}
_RUSH_Q_SPF = (("scheduler", "rush-Q"),)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "Table 6.6, published job set",
        "## Results: Table 6.6 (published job set",
        "| trace | jobs | EASY++ | EASY++ online",
        "published",
        _table_6_6("jobs", *_SIX_SIX)
        | {
            "EASY++ online (round 23)": (Source("easy_online.md", "EASY++ online"),),
            "Gaussier online (round 24)": (Source("gaussier_online.md", "Gaussier online"),),
        },
        published=_SIX_SIX,
    ),
    Claim(
        "What the parts do, published job set",
        "## Results: Table 6.6 (published job set",
        "| trace | SJBF on requests |",
        "published",
        _schedulers(_PARTS),
    ),
    Claim(
        "Prediction accuracy, published job set",
        "## Results: Table 6.6 (published job set",
        "| trace | EASY++: median abs. error",
        "published",
        {
            "EASY++: median abs. error, underpredicted, accuracy": _accuracy("easy++"),
            "Gaussier: median abs. error, underpredicted, accuracy": _accuracy("gaussier"),
        },
    ),
    Claim(
        "Table 6.6, full job set",
        "## Results (full job set",
        "| trace | jobs | EASY++ | Gaussier et al. |",
        "full",
        _table_6_6("jobs", *_SIX_SIX)
        | _schedulers({"SJBF on requests": _PARTS["SJBF on requests"]} | _BESIDE_6_6),
        published=_SIX_SIX,
    ),
    Claim(
        "Table 6.6 with the starved-head rule, both job sets",
        "## Starved jobs under predicted reservations",
        "| job set | trace | EASY++ | Gaussier et al. |",
        None,
        _table_6_6(*_SIX_SIX) | _schedulers(_BESIDE_6_6),
        published=_SIX_SIX,
    ),
    Claim(
        "EASY++ online, both job sets",
        "### Results (round 23",
        "| trace | jobs | EASY++ log history |",
        None,
        {
            column: (Source("easy_online.md", column),)
            for column in (
                "jobs",
                "EASY++ log history",
                "EASY++ online",
                "online - log",
                "thesis",
                "Tsafrir et al.",
            )
        },
    ),
    Claim(
        "Gaussier online, both job sets",
        "### Results (round 24",
        "| trace | jobs | Gaussier weekly |",
        None,
        {
            column: (Source("gaussier_online.md", source),)
            for column, source in (
                ("jobs", "jobs"),
                ("Gaussier weekly", "Gaussier weekly"),
                ("Gaussier online", "Gaussier online"),
                ("online - weekly", "online - weekly"),
                ("weekly, correct to request", "Gaussier weekly, correct to request"),
                ("online, correct to request (their C-V triple)", "Gaussier online, correct to request"),
                ("Gaussier et al.", "Gaussier et al."),
            )
        },
    ),
    Claim(
        "The online schedulers' noise, published job set",
        "### Results (round 26; `results/published/online_noise.md`",
        "| trace | scheduler | unjittered |",
        "published",
        {
            column: (Source("online_noise.md", source),)
            for column, source in (
                ("unjittered", "unjittered"),
                ("jitter mean", "jitter mean"),
                ("sd", "jitter sd"),
                ("authors", "authors"),
                ("gap to authors", "gap to authors"),
                ("log history", "log history"),
                ("gap to log history", "gap to log history"),
            )
        }
        | {
            "[min, max]": (
                Source("online_noise.md", "jitter min", index=0),
                Source("online_noise.md", "jitter max", index=1),
            )
        },
        scheduler_names={"EASY++ online": "easy++-online", "Gaussier online": "gaussier-online"},
    ),
    Claim(
        "The starved-head rule, before and after, both job sets",
        "## Starved jobs under predicted reservations",
        "| job set | trace | scheduler | improvement % |",
        None,
        {
            "improvement %": _starvation("improvement_pct"),
            "max wait, days": _starvation("max_wait_s", 1 / 86400),
            "p99 wait, h": _starvation("p99_wait_s", 1 / 3600),
            "waits > 10^6 s": _starvation("waits_over_1e6_s"),
        },
    ),
    Claim(
        "H13a against SPF-CI over 8 tie-break seeds (D15), published job set",
        "### H13a against SPF-CI paired over tie-break seeds",
        "| trace | SPF-CI by arrival |",
        "published",
        _paired(
            "paired_seeds.md",
            {
                "SPF-CI by arrival": "SPF-CI by arrival",
                "H13a by arrival": "H13a by arrival",
                "SPF-CI, 8 seeds: mean (min-max)": "SPF-CI over seeds: mean (min-max)",
                "H13a, 8 seeds: mean (min-max)": "H13a over seeds: mean (min-max)",
                "d: mean": "H13a - SPF-CI: mean",
                "d: min": "min",
                "d: max": "max",
                "d >= 0": "H13a >= SPF-CI",
                "Wilcoxon p": "Wilcoxon p",
                "sign p": "sign test p",
                "kills": "kills (both; FCFS-CI's)",
            },
        ),
    ),
    Claim(
        "D15 replicated over 32 new seeds (D16), published job set",
        "### D16: D15 replicated with 32 new seeds",
        "| trace | SPF-CI, 32 seeds",
        "published",
        _paired(
            "paired_seeds_d16.md",
            {
                "SPF-CI, 32 seeds: mean (min-max)": "SPF-CI over seeds: mean (min-max)",
                "H13a, 32 seeds: mean (min-max)": "H13a over seeds: mean (min-max)",
                "d: mean": "H13a - SPF-CI: mean",
                "d: 95 % t-interval": "95 % t-interval",
                "d: min": "min",
                "d: max": "max",
                "d >= 0": "H13a >= SPF-CI",
            },
        ),
    ),
    Claim(
        "rush-Q held to FCFS-CI's kill rate (H12), published job set",
        "### rush-Q held to FCFS-CI's own kill rate",
        "| trace | SPF-CI | FCFS-CI kills |",
        "published",
        {
            "SPF-CI": _single(_SPF_CI),
            "FCFS-CI kills": _KILLS,
            "quantile SPF-CI, 25 % budget": _rush_q("quantile SPF-CI (kill budget)"),
            "quantile SPF-CI, FCFS-CI's kill rate": _rush_q("quantile SPF-CI (FCFS-CI's kill rate)"),
            "rush-Q, 25 % budget": _single("rush-Q (kill budget)"),
            "rush-Q, FCFS-CI's kill rate": _single("rush-Q (FCFS-CI's kill rate)"),
        },
    ),
    _hypothesis(
        "### SPF-CI's own classes with the predictor",
        "| trace | SPF-CI | H13a",
        {
            "SPF-CI": _SPF_CI,
            "H13a: ranked on predictions": _H13A,
            "H13b: with predictions": "SPF-CI with predictions",
        },
        "kills (FCFS-CI's)",
    ),
    _hypothesis(
        "### The slowdown risk and tie-breaks",
        "| trace | SPF-CI (rerun) | H13a (mean)",
        {
            "SPF-CI (rerun)": _SPF_CI,
            "H13a (mean)": _H13A,
            "H14 (slowdown risk)": "SPF-CI ranked on slowdown risk",
            "H15 (tie-breaks, post hoc)": "SPF-CI with predicted tie-breaks",
        },
        "kills (FCFS-CI's)",
    ),
    _hypothesis(
        "### SAF-CI ranked on the predicted area",
        "| trace | SPF-CI (rerun) | H13a | H16",
        {
            "SPF-CI (rerun)": _SPF_CI,
            "H13a": _H13A,
            "H16 (predicted area)": "SAF-CI ranked on predictions",
            "control: SAF-CI on requests": "SAF-CI (classifier)",
        },
        "kills (FCFS-CI's)",
    ),
    _hypothesis(
        "### SPF-CI ranked on the predictor only where it is confident",
        "| trace | SPF-CI (rerun) | H13a | H17",
        {"SPF-CI (rerun)": _SPF_CI, "H13a": _H13A, "H17 (confident only)": _H17},
        "kills (FCFS-CI's)",
    ),
    _hypothesis(
        "### SPF-CI moved one request step where confident",
        "| trace | SPF-CI (rerun) | H17 | H18",
        {"SPF-CI (rerun)": _SPF_CI, "H17": _H17, "H18 single run": "SPF-CI one step where confident"},
        "kills (FCFS-CI's)",
    ),
    _hypothesis(
        "### SPF-CI's order, backfilled on Gaussier et al.'s online predictions",
        "| trace | SPF-CI (rerun = committed) | H19",
        {
            "SPF-CI (rerun = committed)": _SPF_CI,
            "H19 single run": "SPF-CI backfilled on Gaussier online",
            "EASY++ online in H19's place (context): single; paired mean": "SPF-CI backfilled on EASY++ online",
        },
        "kills (all rows; FCFS-CI's)",
    ),
    Claim(
        "Table 6.6's columns over seeds against SPF-CI (round 28), full job set",
        "### Results (round 28; `results/full/columns_noise.md`",
        "| trace | scheduler | mechanism |",
        "full",
        _paired(
            "columns_noise.md",
            {
                column: column
                for column in (
                    "seeds",
                    "single run",
                    "mean",
                    "sd",
                    "min",
                    "max",
                    "minus SPF-CI: mean",
                    "sd of the differences",
                    "95 % t-interval",
                )
            },
        ),
    ),
    Claim(
        "H18 against SPF-CI over 16 tie-break seeds (round 28), full job set",
        "### Results (round 28; `results/full/columns_noise.md`",
        "| trace | seeds | SPF-CI by arrival | H18 by arrival |",
        "full",
        _paired(
            "paired_seeds_h18.md",
            {
                column: column
                for column in (
                    "seeds",
                    "SPF-CI by arrival",
                    "H18 by arrival",
                    "SPF-CI over seeds: mean (min-max)",
                    "H18 over seeds: mean (min-max)",
                    "H18 - SPF-CI: mean",
                    "95 % t-interval",
                    "H18 >= SPF-CI",
                    "Wilcoxon p",
                    "sign test p",
                    "kills (both; FCFS-CI's)",
                )
            },
        ),
    ),
    Claim(
        "rush-Q with the calibrated mean (H8), both job sets",
        "### rush-Q with the deployed (calibrated) mean",
        "| job set | trace | SPF-CI | FCFS-CI kills | rush-Q |",
        None,
        {
            "SPF-CI": (Source("rush_q.md", "spf_ci_pct", _RUSH_Q_SPF),),
            "FCFS-CI kills": (Source("rush_q.md", "fcfs_ci_kills", _RUSH_Q_SPF),),
            "rush-Q": _rush_q("rush-Q"),
            "rush-Q, kill budget (kills)": _rush_q("rush-Q (kill budget)"),
            "rush-Q, plain threshold (kills)": _rush_q("rush-Q (plain threshold)"),
        },
    ),
)


def audit(readme: Path = README) -> list[Mismatch]:
    """Every claimed README cell that is not its committed file's figure."""
    tables = markdown_tables(readme.read_text())
    return [mismatch for claim in CLAIMS for mismatch in check_claim(claim, tables)]


def unclaimed(readme: Path = README) -> list[tuple[MarkdownTable, list[str]]]:
    """README tables whose section or caption names a results file and that no claim covers."""
    tables = markdown_tables(readme.read_text())
    claimed = {find_table(tables, claim).line for claim in CLAIMS}
    named = [(table, _NAMES_RESULTS.findall(table.section + " " + table.caption)) for table in tables]
    return [(table, files) for table, files in named if files and table.line not in claimed]


def last_change(path: str) -> str:
    """The commit that last changed a results file: short hash, date, subject's start."""
    out = subprocess.run(
        ["git", "log", "-1", "--format=%h %ad %s", "--date=short", "--", path],
        cwd=STUDY,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return out[:90] or "not committed"


def main() -> int:
    mismatches = audit()
    for mismatch in mismatches:
        print(
            f"README.md:{mismatch.line} {mismatch.claim}: {mismatch.job_set} {mismatch.trace}, "
            f"{mismatch.column}: README {mismatch.readme!r}, {mismatch.file} {mismatch.committed!r} "
            f"(file last changed {last_change(mismatch.file)})"
        )
    print(f"{len(mismatches)} stale cells in {len(CLAIMS)} claimed tables")
    for table, files in unclaimed():
        print(
            f"not compared: README.md:{table.line} {table.section[:60]!r} names {', '.join(sorted(set(files)))}"
        )
    return 1 if mismatches else 0


if __name__ == "__main__":
    # No options: a flag given is refused (exit 2), not ignored while the files are rewritten.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    sys.exit(main())
