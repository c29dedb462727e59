"""The variability study's numbers as the paper's Fig. 4-6 read them (Nichols et al., IPDPS'22).

Input: the study's paired trials, one row per job (:class:`JobRow`), and the questions asked
of the flagging policies (:class:`Prediction`). :func:`summarise` turns them into one
JSON-serialisable dict (results/summary.json), :func:`markdown` into results/tables.md, and
:func:`rush.studies.plots.contention.plot_study` into the figures.

Definitions (all "per trial" numbers are means over the experiment's trials):

* a run has variation against the **campaign** bar when the row says so (``variation``: its
  slowdown exceeds mu + 1.5 sigma of its application's slowdowns in the training campaign);
* against the **within-experiment** bar when its slowdown exceeds mu + 1.5 sigma (population
  sigma) of the slowdowns of its application in the same variant and scenario, pooled over every
  policy and trial, so that every policy is judged by the same bar;
* makespan of a trial: last end minus first submit;
* paired differences: per trial, FCFS+EASY minus the policy (runs with variation removed) and
  (policy - FCFS+EASY) / FCFS+EASY in % (makespan); the trials both ran;
* flag agreement: a policy's ``flag`` against the present-state oracle's ``oracle_flag`` for the
  same job, nodes and moment (the oracle's answer is the positive class).

Policies whose name holds ``ORACLE`` know ground truth no scheduler has: they are diagnostics,
reported beside RUSH and labelled so, never as a result.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, TypeAdapter, ValidationError

from rush.errors import ConfigError
from rush.simulator.result import atomic_write
from rush.studies.tables import markdown_lines

BASELINE = "FCFS+EASY"
PRESENT_ORACLE = "PRESENT-ORACLE"
PAPER_VARIANT = "paper"
SCENARIO_ORDER: tuple[str, ...] = ("ADAA", "ADPA", "PDPA", "WS", "SS")
# The paper's threshold: mu + 1.5 sigma of an application's slowdowns.
SIGMAS = 1.5
UNLIMITED = -1
DIAGNOSTIC = " (diagnostic)"

Finite = Annotated[float, Field(allow_inf_nan=False)]


class JobRow(BaseModel):
    """One job of one trial, as the study hands it over (extra keys are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    variant: str = Field(min_length=1, description='the set-up, "paper" for the faithful one')
    scenario: str = Field(min_length=1, description="ADAA, ADPA, PDPA, WS or SS")
    policy: str = Field(min_length=1, description='e.g. "FCFS+EASY", "RUSH", "PRESENT-ORACLE"')
    trial: int = Field(ge=0, description="the paired trial's number")
    job_id: int | str
    app: str = Field(min_length=1)
    size: int = Field(ge=1, description="nodes")
    submit: Finite
    end: Finite
    runtime: Finite = Field(gt=0, description="seconds")
    slowdown: Finite = Field(gt=0, description="runtime over the unimpeded runtime")
    wait: Finite = Field(ge=0, description="seconds")
    skips: int = Field(ge=0)
    skip_limit: int = Field(ge=UNLIMITED, description="the policy's skip limit, -1 for unlimited")
    limit_hit: StrictBool = Field(description="the job started because it reached its skip limit")
    variation: StrictBool = Field(description="slowdown above the campaign's threshold for its app")


class Prediction(BaseModel):
    """One question asked of a flagging policy, with the present-state oracle's answer beside it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    variant: str = Field(min_length=1)
    scenario: str = Field(min_length=1)
    policy: str = Field(min_length=1)
    trial: int = Field(ge=0)
    app: str = Field(min_length=1)
    job_id: int | str | None = Field(None, description="the job asked about (for the start decisions)")
    t: Finite | None = Field(None, description="when it was asked (for the start decisions)")
    flag: StrictBool = Field(description="the policy's answer")
    oracle_flag: StrictBool = Field(description="the present-state oracle's answer")


_ROWS = TypeAdapter(list[JobRow])
_PREDICTIONS = TypeAdapter(list[Prediction])


def _validated(adapter: TypeAdapter, items: Sequence[dict], name: str, model: type[BaseModel]) -> list:
    try:
        return adapter.validate_python(list(items))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        index, *key = first["loc"] or ("?",)
        field = ".".join(map(str, key)) or "(row)"
        info = model.model_fields.get(str(key[0])) if key else None
        hint = f"{field} must be {info.description}" if info is not None and info.description else ""
        if first["type"] == "missing":
            problem = f"missing key {field!r}"
        else:
            problem = f"bad value {str(first.get('input'))[:80]} for {field!r}: {first['msg']}"
        raise ConfigError(
            f"{problem} in a {name[:-1]} of the study",
            where=f"{name}[{index}].{field}",
            fix=hint
            or f"every {name[:-1]} needs the keys of rush.studies.contention_report.{model.__name__}",
        ) from None


def is_diagnostic(policy: str) -> bool:
    """Oracles know the ground truth; their numbers are bounds, not results."""
    return "ORACLE" in policy.upper()


def label(policy: str) -> str:
    return policy + DIAGNOSTIC if is_diagnostic(policy) else policy


def limit_text(limit: int | None) -> str:
    if limit is None:
        return "—"
    return "unlimited" if limit == UNLIMITED else str(limit)


def _policy_key(policy: str) -> tuple:
    # Baseline, RUSH by growing skip limit, other schedulers, then the diagnostics.
    if policy == BASELINE:
        return (0, 0, policy)
    if policy == "RUSH":
        return (1, 10, policy)
    m = re.fullmatch(r"RUSH-(\d+)", policy)
    if m:
        return (1, int(m.group(1)), policy)
    if policy == "RUSH-UNLIMITED":
        return (1, math.inf, policy)
    if is_diagnostic(policy):
        return (3, 0 if policy == PRESENT_ORACLE else 1, policy)
    return (2, 0, policy)


def _scenario_key(scenario: str) -> tuple:
    return (
        (SCENARIO_ORDER.index(scenario), "")
        if scenario in SCENARIO_ORDER
        else (len(SCENARIO_ORDER), scenario)
    )


def _variant_key(variant: str) -> tuple:
    return (variant != PAPER_VARIANT, variant)


def is_skip_limit_policy(policy: str) -> bool:
    """RUSH and its skip-limit sensitivity runs (RUSH-30, RUSH-UNLIMITED)."""
    return policy == "RUSH" or bool(re.fullmatch(r"RUSH-(\d+|UNLIMITED)", policy))


def _float(x: float) -> float | None:
    # JSON has no inf/NaN; None reads as "undefined" (e.g. precision with nothing flagged).
    x = float(x)
    return x if math.isfinite(x) else None


def _spread(values: Sequence[float]) -> dict[str, Any]:
    """Mean, min and max over trials, and the per-trial values (in trial order)."""
    v = [float(x) for x in values]
    if not v:
        return {"mean": None, "min": None, "max": None, "per_trial": []}
    return {"mean": _float(np.mean(v)), "min": min(v), "max": max(v), "per_trial": v}


@dataclass
class _Trial:
    """One trial's jobs of one (variant, scenario, policy)."""

    rows: list[JobRow]

    def makespan(self) -> float:
        return max(r.end for r in self.rows) - min(r.submit for r in self.rows)


def within_thresholds(rows: Iterable[JobRow]) -> dict[str, dict[str, dict[str, float]]]:
    """variant -> scenario -> app -> mu + 1.5 sigma of slowdown over every policy and trial."""
    pooled: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in rows:
        pooled[(r.variant, r.scenario, r.app)].append(r.slowdown)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (variant, scenario, app), s in sorted(pooled.items()):
        a = np.sort(s)  # sorted: the same bar whatever order the rows came in (to the last bit)
        out.setdefault(variant, {}).setdefault(scenario, {})[app] = float(a.mean() + SIGMAS * a.std())
    return out


def at_skip_limit(r: JobRow) -> bool:
    """Started flagged because its skips had reached the limit (the paper's "threshold")."""
    return r.limit_hit and 0 < r.skip_limit <= r.skips


def _counts(rows: list[JobRow], bar: dict[str, float]) -> dict[str, float]:
    return {
        "runs": len(rows),
        "variation": sum(r.variation for r in rows),
        "variation_within": sum(r.slowdown > bar[r.app] for r in rows),
        # Every start of a flagged job: at the limit, released from an idle machine, or (RUSH-MOVE)
        # moved to leaves called quiet, with no skip at all.
        "flagged_starts": sum(r.limit_hit for r in rows),
        "starts_at_limit": sum(at_skip_limit(r) for r in rows),
        "skips": sum(r.skips for r in rows),
    }


def _group(trials: dict[int, _Trial], bar: dict[str, float], ids: list[int]) -> dict[str, Any]:
    """The metrics of one (variant, scenario, policy), or of one application in it, over the
    trials ``ids`` (a trial missing from ``trials`` counts 0 runs)."""
    per = [_counts(trials[t].rows if t in trials else [], bar) for t in ids]
    ran = [t for t in ids if t in trials and trials[t].rows]
    jobs = [r for t in ran for r in trials[t].rows]
    runtime = np.array([r.runtime for r in jobs])
    n = len(ids)
    return {
        "trials": n,
        "trial_ids": list(ids),
        "runs": sum(c["runs"] for c in per) / n,
        "runs_with_variation": sum(c["variation"] for c in per) / n,
        "runs_with_variation_within": sum(c["variation_within"] for c in per) / n,
        "variation_per_trial": [c["variation"] for c in per],
        "variation_within_per_trial": [c["variation_within"] for c in per],
        # Mean over trials of each trial's mean wait (trials weigh alike).
        "wait_mean": _float(np.mean([np.mean([r.wait for r in trials[t].rows]) for t in ran])),
        "runtime_mean": _float(runtime.mean()),
        "runtime_max": _float(runtime.max()),
        "slowdown_mean": _float(np.mean([r.slowdown for r in jobs])),
        "flagged_starts_per_trial": sum(c["flagged_starts"] for c in per) / n,
        "starts_at_limit_per_trial": sum(c["starts_at_limit"] for c in per) / n,
        "skips_per_trial": sum(c["skips"] for c in per) / n,
    }


def _experiment(trials: dict[int, _Trial], bar: dict[str, float], policy: str) -> dict[str, Any]:
    ids = sorted(trials)
    out = _group(trials, bar, ids)
    makespans = [trials[t].makespan() for t in ids]
    limits = sorted({r.skip_limit for t in trials.values() for r in t.rows})
    out.update(
        diagnostic=is_diagnostic(policy),
        makespan_mean=_float(np.mean(makespans)),
        makespans=makespans,
        # One limit per policy in practice; a list says so when it is not.
        skip_limit=limits[0] if len(limits) == 1 else limits,
    )
    by_app: dict[str, dict[int, _Trial]] = defaultdict(dict)
    for t, trial in trials.items():
        for r in trial.rows:
            by_app[r.app].setdefault(t, _Trial([])).rows.append(r)
    out["apps"] = {
        app: _group(by_app[app], bar, ids) | {"threshold_within": bar[app]}
        for app in sorted(by_app, key=str.lower)
    }
    return out


def _paired(base: dict[str, Any], other: dict[str, Any]) -> dict[str, Any] | None:
    """Per trial both ran: runs with variation removed and makespan change (%) against the baseline."""
    b_ids, o_ids = base["trial_ids"], other["trial_ids"]
    common = [t for t in b_ids if t in o_ids]
    if not common:
        return None
    bi = {t: k for k, t in enumerate(b_ids)}
    oi = {t: k for k, t in enumerate(o_ids)}

    def diff(key: str) -> list[float]:
        return [base[key][bi[t]] - other[key][oi[t]] for t in common]

    span = [
        100.0 * (other["makespans"][oi[t]] - base["makespans"][bi[t]]) / base["makespans"][bi[t]]
        for t in common
    ]
    return {
        "trials": common,
        "removed": _spread(diff("variation_per_trial")),
        "removed_within": _spread(diff("variation_within_per_trial")),
        "makespan_change_pct": _spread(span),
    }


def _agreement(preds: list[Prediction]) -> dict[str, Any]:
    tp = sum(p.flag and p.oracle_flag for p in preds)
    fp = sum(p.flag and not p.oracle_flag for p in preds)
    fn = sum(not p.flag and p.oracle_flag for p in preds)
    tn = len(preds) - tp - fp - fn
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if precision is None or recall is None:
        f1 = None
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "asked": len(preds),
        "flagged": tp + fp,
        "oracle_flagged": tp + fn,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def start_decisions(preds: list[Prediction]) -> list[Prediction]:
    """Each job's last question (the one its start followed): a "no" starts the job at once and a
    "yes" is asked again at the next pass, so per-question counts weigh repeated true flags and
    hide that every false negative is a start. Questions without a job id or time are left out."""
    last: dict[tuple[int, int | str], Prediction] = {}
    for q in preds:
        if q.job_id is None or q.t is None:
            continue
        key = (q.trial, q.job_id)
        if key not in last or q.t >= last[key].t:  # type: ignore[operator]
            last[key] = q
    return list(last.values())


def summarise(rows: Sequence[dict], predictions: Sequence[dict]) -> dict[str, Any]:
    """The study's metrics (see the module's docstring); plain JSON types only.

    ``experiments[variant][scenario][policy]``: runs, runs with variation (campaign / within),
    makespan, wait, runtimes, flagged starts, starts at the skip limit and skips, per application
    under ``apps``;
    ``paired[variant][scenario][policy]``: the differences against FCFS+EASY per trial;
    ``agreement[variant][scenario][policy]``: the flags against the present-state oracle's.
    """
    jobs: list[JobRow] = _validated(_ROWS, rows, "rows", JobRow)
    asked: list[Prediction] = _validated(_PREDICTIONS, predictions, "predictions", Prediction)
    bars = within_thresholds(jobs)
    grouped: dict[tuple[str, str, str], dict[int, _Trial]] = defaultdict(dict)
    for r in jobs:
        grouped[(r.variant, r.scenario, r.policy)].setdefault(r.trial, _Trial([])).rows.append(r)
    keys = sorted(grouped, key=lambda k: (_variant_key(k[0]), _scenario_key(k[1]), _policy_key(k[2])))
    experiments: dict[str, dict[str, dict[str, Any]]] = {}
    for v, s, p in keys:
        experiments.setdefault(v, {}).setdefault(s, {})[p] = _experiment(grouped[(v, s, p)], bars[v][s], p)

    paired: dict[str, dict[str, dict[str, Any]]] = {}
    for v, by_scenario in experiments.items():
        for s, by_policy in by_scenario.items():
            if BASELINE not in by_policy:
                continue
            for p, e in by_policy.items():
                d = _paired(by_policy[BASELINE], e) if p != BASELINE else None
                if d is not None:
                    paired.setdefault(v, {}).setdefault(s, {})[p] = d
            # The target: a policy's removals as a share of the present-state oracle's.
            oracle = paired.get(v, {}).get(s, {}).get(PRESENT_ORACLE)
            for d in paired.get(v, {}).get(s, {}).values():
                for key in ("removed", "removed_within"):
                    bound = oracle[key]["mean"] if oracle else None
                    # Undefined when the oracle removes nothing (or adds runs with variation).
                    d[f"{key}_share_of_oracle"] = d[key]["mean"] / bound if bound and bound > 0 else None

    by_key: dict[tuple[str, str, str], list[Prediction]] = defaultdict(list)
    for q in asked:
        by_key[(q.variant, q.scenario, q.policy)].append(q)
    agreement: dict[str, dict[str, dict[str, Any]]] = {}
    for v, s, p in sorted(by_key, key=lambda k: (_variant_key(k[0]), _scenario_key(k[1]), _policy_key(k[2]))):
        preds = by_key[(v, s, p)]
        a = _agreement(preds)
        # Per trial of the experiment's rows: a trial where nothing was asked still counts.
        e = experiments.get(v, {}).get(s, {}).get(p)
        n = e["trials"] if e else len({q.trial for q in preds})
        a["asked_per_trial"] = a["asked"] / n
        a["flagged_per_trial"] = a["flagged"] / n
        per_app: dict[str, list[Prediction]] = defaultdict(list)
        for q in preds:
            per_app[q.app].append(q)
        a["apps"] = {app: _agreement(per_app[app]) for app in sorted(per_app, key=str.lower)}
        a["at_start"] = _agreement(start_decisions(preds))
        agreement.setdefault(v, {}).setdefault(s, {})[p] = a

    summary = {
        "baseline": BASELINE,
        "present_oracle": PRESENT_ORACLE,
        "sigmas": SIGMAS,
        "variants": list(experiments),
        "thresholds_within": bars,
        "experiments": experiments,
        "paired": paired,
        "agreement": agreement,
    }
    return _plain(summary)


def _plain(obj: Any) -> Any:
    """Python types only (numpy scalars crept in through sums of numpy bools)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _float(obj)
    return obj


# --- tables.md ---------------------------------------------------------------------------


def _num(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _signed(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:+.{digits}f}"


def _range(d: dict[str, Any] | None, digits: int = 1, unit: str = "") -> str:
    """``mean [min, max]`` over trials; the mean alone for one trial."""
    if not d or d["mean"] is None:
        return "—"
    text = f"{_signed(d['mean'], digits)}{unit}"
    if len(d["per_trial"]) > 1:
        text += f" [{_signed(d['min'], digits)}, {_signed(d['max'], digits)}]"
    return text


def _share(d: dict[str, Any] | None, policy: str) -> str:
    if d is None or policy == PRESENT_ORACLE:
        return "—"
    c, w = d["removed_share_of_oracle"], d["removed_within_share_of_oracle"]
    return f"{_num(None if c is None else 100 * c, 0)} / {_num(None if w is None else 100 * w, 0)} %"


def _limits(e: dict[str, Any]) -> str:
    limit = e["skip_limit"]
    return limit_text(limit) if isinstance(limit, int) else ", ".join(map(limit_text, limit))


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [*markdown_lines(header, rows), ""]


def _flags(summary: dict[str, Any], v: str, s: str, p: str) -> str:
    a = summary["agreement"].get(v, {}).get(s, {}).get(p)
    return "—" if a is None else f"{a['flagged_per_trial']:.1f} / {a['asked_per_trial']:.1f}"


def _experiment_rows(summary: dict[str, Any], v: str) -> list[list[str]]:
    out = []
    for s, by_policy in summary["experiments"][v].items():
        for p, e in by_policy.items():
            d = summary["paired"].get(v, {}).get(s, {}).get(p)
            out.append(
                [
                    s,
                    label(p),
                    str(e["trials"]),
                    f"{e['runs']:.1f}",
                    f"{e['runs_with_variation']:.1f} / {e['runs_with_variation_within']:.1f}",
                    _range(d["removed"] if d else None),
                    _range(d["removed_within"] if d else None),
                    _share(d, p),
                    f"{e['makespan_mean']:.0f}",
                    _range(d["makespan_change_pct"] if d else None, unit=" %"),
                    _num(e["wait_mean"], 0),
                    "—" if p == BASELINE else _limits(e),  # FCFS+EASY never skips
                    f"{e['flagged_starts_per_trial']:.1f}",
                    f"{e['starts_at_limit_per_trial']:.1f}",
                    _flags(summary, v, s, p),
                ]
            )
    return out


def _app_rows(summary: dict[str, Any], v: str) -> list[list[str]]:
    out = []
    for s, by_policy in summary["experiments"][v].items():
        apps = sorted({a for e in by_policy.values() for a in e["apps"]}, key=str.lower)
        for app in apps:
            for p, e in by_policy.items():
                a = e["apps"].get(app)
                if a is None:
                    continue
                out.append(
                    [
                        s,
                        app,
                        label(p),
                        f"{a['threshold_within']:.3f}",
                        f"{a['runs']:.1f}",
                        f"{a['runs_with_variation']:.1f} / {a['runs_with_variation_within']:.1f}",
                        f"{a['runtime_mean']:.0f} / {a['runtime_max']:.0f}",
                        _num(a["wait_mean"], 0),
                        f"{a['flagged_starts_per_trial']:.1f}",
                        f"{a['starts_at_limit_per_trial']:.1f}",
                    ]
                )
    return out


def markdown(summary: dict[str, Any]) -> str:
    """results/tables.md: per variant the per-experiment and per-application tables, then the
    flag-agreement and skip-limit sensitivity tables."""
    lines = [
        "# Variability study: tables",
        "",
        "Runs with variation per trial (mean over trials) against the campaign's thresholds / against",
        f"within-experiment thresholds (mu + {summary['sigmas']} sigma of the application's slowdowns in the",
        "scenario, pooled over all policies and trials). Paired columns: per trial against FCFS+EASY,",
        "mean [min, max] over trials; removed = FCFS+EASY's runs with variation minus the policy's.",
        "Rows marked (diagnostic) are oracles that know ground truth no scheduler has: bounds, not results.",
        "Flagged starts: jobs started while flagged (at the skip limit, released from an idle machine, or",
        "moved to quiet leaves by RUSH-MOVE with no skip); starts at the skip limit: those whose skips had",
        'reached the limit, the paper\'s "threshold".',
        "",
    ]
    for v in summary["variants"]:
        lines += [f"## Variant `{v}`: per experiment", ""]
        lines += _table(
            (
                "scenario",
                "policy",
                "trials",
                "runs",
                "with variation (campaign / within)",
                "removed vs FCFS+EASY (campaign)",
                "removed vs FCFS+EASY (within)",
                "share of PRESENT-ORACLE's removal (campaign / within)",
                "makespan (s)",
                "Δmakespan vs FCFS+EASY",
                "mean wait (s)",
                "skip limit",
                "flagged starts / trial",
                "starts at the skip limit / trial",
                "flagged / asked per trial",
            ),
            _experiment_rows(summary, v),
        )
        lines += [f"## Variant `{v}`: per application", ""]
        lines += _table(
            (
                "scenario",
                "app",
                "policy",
                "within bar (slowdown)",
                "runs / trial",
                "with variation (campaign / within)",
                "runtime mean / max (s)",
                "mean wait (s)",
                "flagged starts / trial",
                "starts at the skip limit / trial",
            ),
            _app_rows(summary, v),
        )
    lines += ["## Flag agreement with the present-state oracle", ""]
    agreement = [
        [
            v,
            s,
            label(p),
            str(a["asked"]),
            str(a["flagged"]),
            str(a["oracle_flagged"]),
            str(a["tp"]),
            str(a["fp"]),
            str(a["fn"]),
            str(a["tn"]),
            _num(a["precision"], 3),
            _num(a["recall"], 3),
            _num(a["f1"], 3),
        ]
        for v, by_s in summary["agreement"].items()
        for s, by_p in by_s.items()
        for p, a in by_p.items()
    ]
    if agreement:
        lines += [
            "Positive class: the present-state oracle flags the job (started now on its tentative nodes,",
            "its slowdown would exceed its application's threshold). — : undefined (nothing flagged / nothing to flag).",
            "",
        ]
        lines += _table(
            (
                "variant",
                "scenario",
                "policy",
                "asked",
                "flagged",
                "oracle flagged",
                "tp",
                "fp",
                "fn",
                "tn",
                "precision",
                "recall",
                "F1",
            ),
            agreement,
        )
        at_start = [
            [v, s, label(p), str(d["asked"]), str(d["flagged"]), str(d["oracle_flagged"]), str(d["fn"]),
             _num(d["precision"], 3), _num(d["recall"], 3), _num(d["f1"], 3)]
            for v, by_s in summary["agreement"].items()
            for s, by_p in by_s.items()
            for p, a in by_p.items()
            if (d := a.get("at_start")) and d["asked"]
        ]  # fmt: skip
        if at_start:
            lines += [
                'At the start decision (each job\'s last question): a "no" starts the job, so every false',
                "negative here is a job started where the oracle would have held it.",
                "",
            ]
            lines += _table(
                ("variant", "scenario", "policy", "jobs", "flagged at start", "oracle flagged at start",
                 "started against the oracle (fn)", "precision", "recall", "F1"),
                at_start,
            )  # fmt: skip
    else:
        lines += ["No predictions were recorded.", ""]
    lines += ["## Skip-limit sensitivity", ""]
    sensitivity = []
    for v, by_s in summary["experiments"].items():
        for s, by_p in by_s.items():
            for p, e in by_p.items():
                if p != BASELINE and not is_skip_limit_policy(p):
                    continue
                d = summary["paired"].get(v, {}).get(s, {}).get(p)
                sensitivity.append(
                    [
                        v,
                        s,
                        p,
                        "—" if p == BASELINE else _limits(e),
                        f"{e['runs_with_variation']:.1f} / {e['runs_with_variation_within']:.1f}",
                        "—"
                        if d is None
                        else f"{_signed(d['removed']['mean'])} / {_signed(d['removed_within']['mean'])}",
                        _range(d["makespan_change_pct"] if d else None, unit=" %"),
                        _num(e["wait_mean"], 0),
                        f"{e['flagged_starts_per_trial']:.1f}",
                        f"{e['starts_at_limit_per_trial']:.1f}",
                        f"{e['skips_per_trial']:.1f}",
                        f"{e['runtime_max']:.0f}",
                    ]
                )
    if any(r[2] != BASELINE for r in sensitivity):
        lines += _table(
            (
                "variant",
                "scenario",
                "policy",
                "skip limit",
                "with variation (campaign / within)",
                "removed vs FCFS+EASY (campaign / within)",
                "Δmakespan vs FCFS+EASY",
                "mean wait (s)",
                "flagged starts / trial",
                "starts at the skip limit / trial",
                "skips / trial",
                "max runtime (s)",
            ),
            sensitivity,
        )
    else:
        lines += ["No RUSH runs with a skip limit were recorded.", ""]
    return "\n".join(lines)


def write_report(
    out: Path, rows: Sequence[dict], predictions: Sequence[dict], plots: bool = True
) -> dict[str, Any]:
    """out/results/summary.json and tables.md (each replaced whole), and out/plots/*.png."""
    summary = summarise(rows, predictions)
    results = out / "results"
    results.mkdir(parents=True, exist_ok=True)
    with atomic_write(results / "summary.json") as fh:
        json.dump(summary, fh, indent=1, allow_nan=False)
    with atomic_write(results / "tables.md") as fh:
        fh.write(markdown(summary))
    if plots:
        from rush.studies.plots.contention import plot_study

        plot_study(out, rows, summary)
    return summary
