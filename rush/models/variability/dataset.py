"""The variability dataset: campaign records joined with the feature store, labelled per application.

Input: ``records.jsonl`` (the campaign contract: an optional header object with
``"format": "rush-campaign/1"``, then one object per control-job run) and the feature store
the collectors wrote during the campaign. For each run that COMPLETED:

* counters over ``[start - window, start)`` (:func:`rush.models.variability.features.window_features_for`,
  the function the live predictor uses) for each requested scope: the job's nodes (``job_``)
  and all nodes (``all_``), min/max/mean over the per-node means;
* what the job itself brings, whatever the scopes: its node count and how its nodes spread
  over the fabric's leaves and pods (:func:`rush.models.variability.features.placement_features`,
  ``job_nodes``, ``job_leaves``, ...; the leaf and pod of each node from the store's topology);
* the nine probe features (the record's probe, else the latest probe in the store);
* the workload type one-hot ``wtype_compute``, ``wtype_network``, ``wtype_io``.

The all-node window is read through :class:`rush.models.variability.features.WindowReader`
(equal to ``window_features_for``; tests/planner/test_variation_batch.py), kept while the store's
window content is the same: runs that start between two counter ticks share it.

Labels, per application from the mean mu and the standard deviation sigma (population,
ddof 0) of its completed control runs (its runs of its most common node count: see
:func:`labels`), applied to all its runs: ``y_binary`` = 1 when runtime > mu + 1.5 sigma (model and
feature selection); ``y_class`` = 0 "none" below mu + 1.2 sigma, 2 "variation" above
mu + 1.5 sigma, 1 "little" in between (the exported model). The record's ``noise`` flag is
ground truth for analysis only and is kept out of the features.

A feature without data stays NaN; counters the published feature table has but this
machine lacks (the InfiniBand, Omni-Path and Lustre families) are listed in the description
under ``counters``, never synthesised. Output: ``dataset.csv`` (metadata columns, then the
features) and ``dataset.json`` (the description, with the CSV's sha256, checked on load).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)

from rush.collect.probe import FEATURES as PROBE_NAMES
from rush.config_file import explain
from rush.errors import RushError
from rush.hashing import file_sha256
from rush.models.variability.features import (
    PLACEMENT_FEATURES,
    PROBE_FEATURES,
    SCOPES,
    WTYPE_FEATURES,
    WTYPES,
    WindowReader,
    check_window,
    is_placement,
    known_feature,
    placement_features,
    record_probe_features,
    topology_of,
    window_features_for,
    wtype_features,
)
from rush.output_file import replace_file

FORMAT = "rush-campaign/1"  # records.jsonl header: the one spelling (campaign, contention read it here)
DATASET_FORMAT = "rush-variability-dataset/1"
CLASS_NAMES: tuple[str, ...] = ("none", "little", "variation")
BINARY_SIGMA = 1.5  # runtime > mu + 1.5 sigma: variation (binary label and class 2)
LITTLE_SIGMA = 1.2  # runtime < mu + 1.2 sigma: no variation (class 0)
META_COLUMNS: tuple[str, ...] = ("job_id", "app", "wtype", "start", "runtime", "noise", "y_binary", "y_class")
MAX_LINE_BYTES = 1 << 20  # one run is a few hundred bytes; a longer line is refused unread
MAX_RECORDS = 1_000_000
MAX_NODES = 100_000
MAX_NAME = 256
# The counter families of the published feature table (Nichols et al., IPDPS 2022): how many
# counters each had, and the metric-name prefixes rush's collectors use for them.
PUBLISHED_FAMILIES: dict[str, tuple[int, tuple[str, ...]]] = {
    "infiniband": (22, ("ib_",)),
    "omni-path": (34, ("opa_", "hfi_")),
    "lustre": (34, ("lustre_",)),
}


class DatasetError(RushError):
    """Campaign records or a dataset file cannot be used (names the file and line)."""


@dataclass(frozen=True)
class DatasetOptions:
    window: float = 300.0
    scopes: tuple[str, ...] = ("job", "all")

    def checked(self) -> DatasetOptions:
        check_window(self.window, "--window")
        scopes = tuple(dict.fromkeys(self.scopes))
        if not scopes or any(s not in SCOPES for s in scopes):
            raise DatasetError(
                f"scopes {list(self.scopes)!r} are not a non-empty subset of {list(SCOPES)}",
                where="--scope",
                fix="job, all or both",
            )
        return DatasetOptions(float(self.window), scopes)


@dataclass(frozen=True)
class Record:
    job_id: str
    app: str
    wtype: str
    nodes: tuple[str, ...]
    submit: float
    start: float
    end: float
    runtime: float
    state: str
    probe: dict[str, float] | None
    noise: bool | None
    line: int


@dataclass
class Records:
    header: dict[str, Any]
    runs: list[Record]
    sha256: str
    path: str


@dataclass
class Dataset:
    X: np.ndarray  # (n, f) float64, NaN where a feature has no value
    feature_names: list[str]
    y_binary: np.ndarray  # int, 1: runtime > mu + 1.5 sigma of its application
    y_class: np.ndarray  # int, 0 none, 1 little, 2 variation
    apps: np.ndarray  # str
    wtypes: np.ndarray  # str
    job_ids: np.ndarray  # str
    description: dict[str, Any]
    starts: np.ndarray = field(default_factory=lambda: np.empty(0))
    runtimes: np.ndarray = field(default_factory=lambda: np.empty(0))
    noise: list[bool | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.job_ids)

    def save(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Write ``dataset.csv`` and ``dataset.json`` (atomically); return their paths."""
        out = Path(out_dir)
        if out.exists() and not out.is_dir():
            raise DatasetError("is not a directory", where=str(out), fix="give a directory for --out")
        out.mkdir(parents=True, exist_ok=True)
        csv_path, json_path = out / "dataset.csv", out / "dataset.json"
        tmp = csv_path.with_name(csv_path.name + ".tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow([*META_COLUMNS, *self.feature_names])
            for i in range(len(self)):
                noise = self.noise[i] if i < len(self.noise) else None
                writer.writerow(
                    [
                        self.job_ids[i],
                        self.apps[i],
                        self.wtypes[i],
                        repr(float(self.starts[i])),
                        repr(float(self.runtimes[i])),
                        "" if noise is None else int(noise),
                        int(self.y_binary[i]),
                        int(self.y_class[i]),
                        *("" if math.isnan(v) else repr(float(v)) for v in self.X[i]),
                    ]
                )
        description = dict(self.description)
        description["csv_sha256"] = file_sha256(tmp)
        description["feature_names"] = list(self.feature_names)
        json_tmp = json_path.with_name(json_path.name + ".tmp")
        json_tmp.write_text(json.dumps(description, indent=2, sort_keys=True, default=_plain))
        replace_file(tmp, csv_path)
        replace_file(json_tmp, json_path)
        self.description = description
        return csv_path, json_path


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(type(value).__name__)


# -------------------------------------------------------------------------------- records


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as fh:
        number = 0
        while True:
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE_BYTES:
                raise DatasetError(
                    f"line longer than {MAX_LINE_BYTES >> 10} KiB",
                    where=f"{path}:{number}",
                    fix="one run per line",
                )
            yield number, line


def _job_id(value: Any) -> Any:
    # Slurm job ids are numbers in some writers' JSON: 12 is job "12" (bools stay refused).
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _known_wtype(wtype: str) -> str:
    if wtype not in WTYPES:
        raise ValueError(f"unknown wtype {wtype!r}; use one of: {', '.join(WTYPES)}")
    return wtype


def _whole_probe(probe: Any) -> Any:
    if isinstance(probe, dict):
        missing = [name for name in PROBE_NAMES if name not in probe]
        if missing:
            raise ValueError(f"probe lacks {', '.join(missing)} (all nine probe features)")
    return probe


Finite = Annotated[float, Field(strict=True, allow_inf_nan=False)]  # strict: true and "10" are no numbers
Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME)]
ProbeValues = create_model(  # type: ignore[call-overload]
    "ProbeValues",
    __config__=ConfigDict(extra="ignore"),
    **{
        name: (Annotated[Finite, Field(ge=0, description="a time or bandwidth >= 0")], ...)
        for name in PROBE_NAMES
    },
)


class RunRecord(BaseModel):
    """One line of ``records.jsonl`` as the campaign contract has it (keys beyond it are kept out)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    job_id: Annotated[Name, BeforeValidator(_job_id)] = Field(
        description=f"a job id (at most {MAX_NAME} characters)"
    )
    app: Name = Field(description=f"an application name (1..{MAX_NAME} characters)")
    wtype: Annotated[StrictStr, AfterValidator(_known_wtype)] = Field(
        description=f"one of {', '.join(WTYPES)}"
    )
    nodes: list[Name] = Field(
        min_length=1,
        max_length=MAX_NODES,
        description=f"a non-empty list of host names (at most {MAX_NODES})",
    )
    submit: Finite = Field(description="a finite time (s since the epoch)")
    start: Finite = Field(description="a finite time (s since the epoch)")
    end: Finite = Field(description="a finite time (s since the epoch), submit <= start <= end")
    state: StrictStr = Field("COMPLETED", min_length=1, max_length=64, description="a short job state")
    runtime: Finite = Field(ge=0, description="seconds >= 0 (> 0 for a COMPLETED run)")
    probe: Annotated[ProbeValues | None, BeforeValidator(_whole_probe)] = Field(  # type: ignore[valid-type]
        None, description="an object of the nine probe features, or null"
    )
    noise: StrictBool | None = Field(None, description="true, false or null")

    @field_validator("end")
    @classmethod
    def _in_order(cls, end: float, info: ValidationInfo) -> float:
        submit, start = info.data.get("submit"), info.data.get("start")
        if submit is not None and start is not None and not submit <= start <= end:
            raise ValueError("submit <= start <= end does not hold (check the clock)")
        return end

    @field_validator("runtime")
    @classmethod
    def _ran(cls, runtime: float, info: ValidationInfo) -> float:
        # A run that failed at once may have lasted 0 s; a COMPLETED one (labelled) ran.
        if runtime == 0 and info.data.get("state") == "COMPLETED":
            raise ValueError("a COMPLETED run lasted 0 s")
        return runtime


def parse_record(obj: object, where: str, line: int) -> Record:
    """One run of the campaign contract, validated (every problem names the line and key): the
    one check of a run record, for the campaign that writes it
    (:func:`rush.campaign.records.validate_record`) and the dataset that reads it."""
    if not isinstance(obj, dict):
        raise DatasetError("a run must be a JSON object", where=where)
    try:
        run = RunRecord.model_validate(obj)
    except ValidationError as exc:
        error = explain(exc, where, RunRecord, example="a record written by rush campaign run")
        raise DatasetError(error.message, where=where, fix=error.fix) from None
    return Record(
        job_id=run.job_id,
        app=run.app,
        wtype=run.wtype,
        nodes=tuple(dict.fromkeys(run.nodes)),
        submit=run.submit,
        start=run.start,
        end=run.end,
        runtime=run.runtime,
        state=run.state,
        probe=None if run.probe is None else {name: getattr(run.probe, name) for name in PROBE_NAMES},
        noise=run.noise,
        line=line,
    )


def read_records(path: str | Path) -> Records:
    """Validate a campaign's ``records.jsonl``; a bad line is an error naming its number."""
    path = Path(path)
    if not path.is_file():  # a FIFO would block, a directory cannot be read
        raise DatasetError("not a regular file", where=str(path), fix="give the campaign's records.jsonl")
    header: dict[str, Any] = {}
    runs: list[Record] = []
    seen: dict[str, int] = {}
    for number, raw in _lines(path):
        where = f"{path}:{number}"
        text = raw.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:  # also a broken UTF-8 byte, int digit limits
            message = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise DatasetError(
                f"not a JSON object: {message}", where=where, fix="one JSON object per line"
            ) from None
        if isinstance(obj, dict) and "format" in obj:
            if runs or header:
                raise DatasetError("a header after the first line", where=where)
            if obj.get("format") != FORMAT:
                raise DatasetError(
                    f"unknown records format {str(obj.get('format'))[:40]!r}",
                    where=where,
                    fix=f"expected {FORMAT}",
                )
            header = {k: obj.get(k) for k in ("format", "campaign", "seed", "command", "machine", "created")}
            continue
        record = parse_record(obj, where, number)
        if record.job_id in seen:
            raise DatasetError(
                f"job_id {record.job_id!r} already on line {seen[record.job_id]}",
                where=where,
                fix="one line per run",
            )
        seen[record.job_id] = number
        runs.append(record)
        if len(runs) > MAX_RECORDS:
            raise DatasetError(f"more than {MAX_RECORDS} runs", where=where, fix="split the campaign")
    if not runs:
        raise DatasetError("no runs in the records", where=str(path), fix="give a campaign's records.jsonl")
    return Records(header, runs, file_sha256(path), str(path))


# -------------------------------------------------------------------------------- labels


def label_thresholds(runtimes: np.ndarray) -> dict[str, float]:
    """mu, sigma (ddof 0) and the two label thresholds of one application."""
    mu, sigma = float(np.mean(runtimes)), float(np.std(runtimes))
    return {
        "runs": len(runtimes),
        "mu": mu,
        "sigma": sigma,
        "little_above": mu + LITTLE_SIGMA * sigma,
        "variation_above": mu + BINARY_SIGMA * sigma,
    }


def labels(
    runtimes: np.ndarray, apps: np.ndarray, sizes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, dict]]:
    """(y_binary, y_class, thresholds per application).

    mu and sigma come from each application's **control runs**: its runs of its most common node
    count (``sizes``; all its runs when None or of one size), the paper's 16-node control jobs in
    the contention campaign. Runs of other sizes are labelled against the same thresholds, which
    assumes weak scaling (an application's unimpeded runtime does not depend on its size, as in
    the campaign): so "variation" means for a 32-node run what it means for a 16-node one, and
    what the experiments count (runs above the control runs' mu + 1.5 sigma)."""
    y_binary = np.zeros(len(runtimes), dtype=np.int64)
    y_class = np.zeros(len(runtimes), dtype=np.int64)
    per_app = {}
    for app in sorted(set(apps.tolist())):
        mask = apps == app
        reference = mask
        if sizes is not None:
            values, counts = np.unique(sizes[mask], return_counts=True)
            control = values[np.argmax(counts)]  # the most common size (the smallest on ties)
            reference = mask & (sizes == control)
        t = label_thresholds(runtimes[reference])
        if sizes is not None:
            t["reference_nodes"] = int(control)
        r = runtimes[mask]
        y_binary[mask] = (r > t["variation_above"]).astype(np.int64)
        y_class[mask] = np.where(r > t["variation_above"], 2, np.where(r < t["little_above"], 0, 1))
        t["variation_runs"] = int((r > t["variation_above"]).sum())
        t["labelled_runs"] = int(mask.sum())
        per_app[app] = t
    return y_binary, y_class, per_app


# -------------------------------------------------------------------------------- build


def _counter_report(names: list[str]) -> dict[str, Any]:
    metrics = sorted(
        {n.split("_", 2)[2] for n in names if n.startswith(("job_", "all_")) and not is_placement(n)}
    )
    families = {}
    for family, (published, prefixes) in PUBLISHED_FAMILIES.items():
        present = [m for m in metrics if m.startswith(prefixes)]
        families[family] = {"published_counters": published, "present": present, "absent": not present}
    known = tuple(p for _, prefixes in PUBLISHED_FAMILIES.values() for p in prefixes)
    return {
        "metrics": metrics,
        "families": families,
        "other": [m for m in metrics if not m.startswith(known)],
        "note": "counters absent on this machine are left out, not synthesised; "
        "the published table had 270 counter features (22 IB, 34 Omni-Path, 34 Lustre, x3 stats)",
    }


def build_dataset(
    records_path: str | Path, store_path: str | Path, options: DatasetOptions | None = None
) -> Dataset:
    """Join the records with the store (see the module doc); label per application."""
    from rush.collect.store import FeatureStore

    options = (options or DatasetOptions()).checked()
    store_path = Path(store_path)
    if not store_path.is_file():  # FeatureStore() would create an empty one
        raise DatasetError(
            "feature store not found",
            where=str(store_path),
            fix="give the store the campaign's collectors wrote",
        )
    records = read_records(records_path)
    completed = [r for r in records.runs if r.state == "COMPLETED"]
    if not completed:
        raise DatasetError(
            "no COMPLETED run in the records", where=str(records_path), fix="run the campaign longer"
        )
    rows: list[dict[str, float]] = []
    with FeatureStore(store_path) as store:
        reader: WindowReader | None = None
        for r in completed:
            features: dict[str, float] = {}
            for k, scope in enumerate(options.scopes):
                if scope == "all" and k > 0:  # the all-node window without the probe: shared
                    if reader is None or not reader.serves(store, r.start, options.window):
                        reader = WindowReader(store, r.start, options.window)
                    features |= reader.all_nodes("all", with_probe=False)
                    continue
                hosts = list(r.nodes) if scope == "job" else None
                features |= window_features_for(
                    store,
                    hosts,
                    r.start,
                    options.window,
                    scope=scope,
                    probe=r.probe,
                    with_probe=k == 0,
                )
            if "job" not in options.scopes:  # the job's own features, whatever the scopes
                features |= placement_features(r.nodes, topology_of(store, r.nodes, r.start, options.window))
            if "probe_send_min" not in features:  # a probe only on the record, none in the store
                features |= record_probe_features(r.probe)
            rows.append(features | wtype_features(r.wtype))
    counters = sorted(
        {
            n
            for row in rows
            for n in row
            if n.startswith(tuple(f"{s}_" for s in options.scopes)) and not is_placement(n)
        }
    )
    by_scope = [n for s in options.scopes for n in counters if n.startswith(f"{s}_")]
    names = [*by_scope, *PLACEMENT_FEATURES, *PROBE_FEATURES, *WTYPE_FEATURES]
    X = np.array([[row.get(n, math.nan) for n in names] for row in rows], dtype=np.float64).reshape(
        len(rows), len(names)
    )
    apps = np.array([r.app for r in completed], dtype=object)
    runtimes = np.array([r.runtime for r in completed])
    sizes = np.array([len(r.nodes) for r in completed])
    y_binary, y_class, per_app = labels(runtimes, apps, sizes)
    missing = np.isnan(X[:, : len(by_scope)]).all(axis=1) if by_scope else np.ones(len(rows), bool)
    description = {
        "format": DATASET_FORMAT,
        "records": str(records_path),
        "records_sha256": records.sha256,
        "store": str(store_path),
        "generator": {"seed": records.header.get("seed"), "command": records.header.get("command")},
        "campaign": {k: records.header.get(k) for k in ("campaign", "machine", "created")},
        "window": options.window,
        "scopes": list(options.scopes),
        "runs": len(records.runs),
        "rows": len(completed),
        "dropped": {"not_completed": len(records.runs) - len(completed)},
        "rows_without_counters": int(missing.sum()),
        "rows_without_probe": int(np.isnan(X[:, names.index("probe_send_min")]).sum()),
        "rows_without_topology": int(np.isnan(X[:, names.index("job_leaves")]).sum()),
        "first_start": float(runtimes.size and min(r.start for r in completed)),
        "last_start": float(runtimes.size and max(r.start for r in completed)),
        "labels": {
            "binary": f"1 when runtime > mu + {BINARY_SIGMA} sigma of its application's control runs "
            "(its most common node count; ddof 0)",
            "classes": list(CLASS_NAMES),
            "class_rule": f"none < mu + {LITTLE_SIGMA} sigma <= little <= mu + {BINARY_SIGMA} sigma < variation",
            "per_app": per_app,
        },
        "counters": _counter_report(names),
        "noise_is_ground_truth_only": True,
    }
    return Dataset(
        X=X,
        feature_names=names,
        y_binary=y_binary,
        y_class=y_class,
        apps=apps,
        wtypes=np.array([r.wtype for r in completed], dtype=object),
        job_ids=np.array([r.job_id for r in completed], dtype=object),
        description=description,
        starts=np.array([r.start for r in completed]),
        runtimes=runtimes,
        noise=[r.noise for r in completed],
    )


# -------------------------------------------------------------------------------- load


def _check_values(csv_path: Path, names: list[str], meta: dict[str, list], X: np.ndarray, fix: str) -> None:
    """Every value a dataset row may hold (a dataset written by another tool, or by hand, with a
    matching sha256): the first bad one names its line and column."""

    def bad(row: int, column: str, problem: str) -> DatasetError:
        return DatasetError(f"{column} {problem}", where=f"{csv_path}:{row + 2}: {column}", fix=fix)

    unknown = [n for n in names if not known_feature(n)]
    if unknown:
        raise DatasetError(
            f"unknown feature column(s) {unknown[:5]}", where=f"{csv_path}:1", fix=fix + " with this rush"
        )
    checks: list[tuple[str, Any, str]] = [
        ("wtype", lambda v: v in WTYPES, f"is not one of {', '.join(WTYPES)}"),
        ("app", lambda v: 0 < len(v) <= MAX_NAME, "is empty or too long"),
        ("y_binary", lambda v: v in ("0", "1"), "is not 0 or 1"),
        ("y_class", lambda v: v in ("0", "1", "2"), "is not 0, 1 or 2 (none, little, variation)"),
    ]
    for column, ok, problem in checks:
        for row, value in enumerate(meta[column]):
            if not ok(value):
                raise bad(row, column, f"{value[:40]!r} {problem}")
    for column in ("start", "runtime"):
        for row, value in enumerate(meta[column]):
            number = float(value) if value else math.nan
            if not math.isfinite(number) or (column == "runtime" and number <= 0):
                raise bad(
                    row,
                    column,
                    f"{value[:40]!r} is not a finite {'runtime > 0' if column == 'runtime' else 'time'}",
                )
    for row, (y, c) in enumerate(zip(meta["y_binary"], meta["y_class"], strict=True)):
        if (y == "1") != (c == "2"):
            raise bad(row, "y_class", f"{c} disagrees with y_binary {y} (variation is class 2)")
    if np.isinf(X).any():
        row, col = (int(k) for k in np.argwhere(np.isinf(X))[0])
        raise bad(row, names[col], "is infinite (a missing value is an empty field)")
    negative = X < 0
    if negative.any():
        row, col = (int(k) for k in np.argwhere(negative)[0])
        raise bad(
            row, names[col], f"is negative ({X[row, col]!r}): counters, probe times and placements are >= 0"
        )


MAX_DESCRIPTION_BYTES = 16 << 20


def load_dataset(path: str | Path) -> Dataset:
    """Read a saved dataset (its directory, dataset.csv or dataset.json); the CSV's sha256 is checked."""
    path = Path(path)
    base = path if path.is_dir() else path.parent
    csv_path, json_path = base / "dataset.csv", base / "dataset.json"
    fix = "rebuild it: rush dataset build RECORDS --store STORE --out DIR"
    for p in (csv_path, json_path):
        if not p.is_file():
            raise DatasetError("dataset file not found", where=str(p), fix=fix)
    if json_path.stat().st_size > MAX_DESCRIPTION_BYTES:
        raise DatasetError("the description is too large to be one", where=str(json_path), fix=fix)
    try:
        description = json.loads(json_path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise DatasetError(
            f"the description is not JSON ({type(exc).__name__})", where=str(json_path), fix=fix
        ) from None
    if not isinstance(description, dict) or description.get("format") != DATASET_FORMAT:
        raise DatasetError(f"not a {DATASET_FORMAT} description", where=str(json_path), fix=fix)
    names = description.get("feature_names")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise DatasetError(
            "feature_names must be a list of names", where=f"{json_path}: feature_names", fix=fix
        )
    if description.get("csv_sha256") != file_sha256(csv_path):
        raise DatasetError(
            "the CSV's sha256 differs from its description: edited or truncated", where=str(csv_path), fix=fix
        )
    meta: dict[str, list] = {c: [] for c in META_COLUMNS}
    rows = []
    try:
        with open(csv_path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header != [*META_COLUMNS, *names]:
                raise DatasetError(
                    "the CSV header does not match the description", where=f"{csv_path}:1", fix=fix
                )
            for number, row in enumerate(reader, start=2):
                if len(row) != len(header):
                    raise DatasetError(
                        f"{len(row)} fields, expected {len(header)}", where=f"{csv_path}:{number}"
                    )
                for c, value in zip(META_COLUMNS, row, strict=False):
                    meta[c].append(value)
                rows.append([float(v) if v else math.nan for v in row[len(META_COLUMNS) :]])
    except ValueError as exc:
        raise DatasetError(f"unreadable value: {exc}", where=str(csv_path), fix=fix) from None
    if not rows:
        raise DatasetError("the dataset has no rows", where=str(csv_path), fix=fix)
    X = np.array(rows, dtype=np.float64)
    _check_values(csv_path, names, meta, X, fix)
    return Dataset(
        X=X,
        feature_names=list(names),
        y_binary=np.array(meta["y_binary"], dtype=np.int64),
        y_class=np.array(meta["y_class"], dtype=np.int64),
        apps=np.array(meta["app"], dtype=object),
        wtypes=np.array(meta["wtype"], dtype=object),
        job_ids=np.array(meta["job_id"], dtype=object),
        description=description,
        starts=np.array(meta["start"], dtype=np.float64),
        runtimes=np.array(meta["runtime"], dtype=np.float64),
        noise=[None if v == "" else v == "1" for v in meta["noise"]],
    )
