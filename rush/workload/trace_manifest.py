"""The catalogue's shipped manifest (``rush/data/trace_manifest.tsv``): each trace's file, sha256,
size, job count and Parallel Workloads Archive directory, and lookup by name or alias.

Apart from :mod:`rush.workload.catalogue` (fetching, caching, loading) so that the trace-file
reader can name a trace to re-fetch without importing the catalogue (which imports the reader).
"""

from __future__ import annotations

import csv
import difflib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from rush.errors import TraceNotFoundError


@dataclass(frozen=True)
class CatalogueEntry:
    file: str
    sha256: str
    bytes: int
    jobs: int
    pwa_dir: str | None

    @property
    def alias(self) -> str:
        # The words before the year: "KTH-SP2-1996-2.1-cln.swf.gz" -> "KTH-SP2"; no year: the stem.
        parts = self.file.removesuffix(".swf.gz").split("-")
        for k, part in enumerate(parts):
            if k and len(part) == 4 and part.isdigit():
                return "-".join(parts[:k])
        return "-".join(parts)


@cache
def catalogue() -> dict[str, CatalogueEntry]:
    text = resources.files("rush.data").joinpath("trace_manifest.tsv").read_text()
    entries = {}
    for row in csv.DictReader(text.splitlines(), delimiter="\t"):
        entry = CatalogueEntry(
            file=row["file"],
            sha256=row["sha256"],
            bytes=int(row["bytes"]),
            jobs=int(row["jobs"]),
            pwa_dir=None if row["pwa_dir"] == "-" else row["pwa_dir"],
        )
        entries[entry.file] = entry
    return entries


def lookup(name: str) -> CatalogueEntry:
    entries = catalogue()
    if name in entries:
        return entries[name]
    by_alias = {e.alias.lower(): e for e in entries.values()}
    by_stem = {e.file.lower().removesuffix(".swf.gz"): e for e in entries.values()}
    key = name.lower().removesuffix(".swf.gz").removesuffix(".swf")
    if key in by_alias:
        return by_alias[key]
    if key in by_stem:
        return by_stem[key]
    close = difflib.get_close_matches(key, [*by_alias, *by_stem], n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    raise TraceNotFoundError(
        f"{name!r} is neither a file nor a catalogue trace",
        where="TRACE",
        fix=f"{hint}give a path, or one of: {', '.join(sorted(e.alias for e in entries.values()))} "
        "(rush trace info --list)",
    )
