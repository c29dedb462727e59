"""The label a variability model learns, and the present-state label's making (issue 28, round six).

Two labels:

- ``variation`` (the study's since issue 28): "did the control run vary" (runtime above its
  application's bar), what :func:`rush.models.variability.dataset.build_dataset` writes.
- ``present-state``: the scheduler's question, "started now on these nodes, in the state of now,
  would it exceed its bar?", answered by the present-state oracle
  (:class:`rush.contention.oracles.PresentStateOracle`) for every control run of the campaign as it
  starts, on its nodes. It is the simulator's ground truth: on a real machine it would need a
  counterfactual (the same job's runtime on the same nodes in the state of that moment), which no
  campaign measures.

The campaign is run with :class:`PresentStateRecorder` in the oracle's place: it notes the oracle's
answer and never flags, so the campaign's decisions, and its records, are those of a campaign run
without it (checked when the answers are made for a campaign already on disk).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rush.contention.labels import LABELS, PresentStateRecorder
from rush.errors import ConfigError
from rush.output_file import replace_file

__all__ = [
    "LABELS",
    "PresentStateRecorder",
    "check_labels",
    "present_state_answers",
    "relabel_present_state",
    "save_answers",
]
ANSWERS = "present-state.json"


def check_labels(text: str, where: str = "--label") -> tuple[str, ...]:
    """Comma-separated labels (any case), each one of :data:`LABELS`; ``variation`` always
    (RUSH's model)."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in LABELS]
    if not names or bad:
        raise ConfigError(
            f"unknown label {', '.join(bad)[:200] or '(none)'}",
            where=where,
            fix=f"some of {', '.join(LABELS)} (comma-separated)",
        )
    return tuple(label for label in LABELS if label in names or label == "variation")


def _runs(path: Path) -> list[str]:
    """A campaign's records but their header (command, date)."""
    return [line for line in path.read_text().splitlines() if '"format"' not in line]


def _key(camp: Path, thresholds: dict[str, Any]) -> dict[str, Any]:
    from rush.hashing import file_sha256

    return {
        "records_sha256": file_sha256(camp / "records.jsonl"),
        "thresholds": json.loads(json.dumps(thresholds)),
    }


def save_answers(camp: Path, thresholds: dict[str, Any], answers: dict[str, bool]) -> None:
    """Keep the answers for the campaign in ``camp`` (its records and the bar are their key)."""
    path = camp / ANSWERS
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": _key(camp, thresholds), "answers": answers}, indent=0))
    replace_file(tmp, path)


def present_state_answers(
    camp: Path, hours: float, seed: int, fabric: Any, noise: Any, thresholds: dict[str, Any]
) -> dict[str, bool]:
    """The answers for the campaign in ``camp``: kept in ``camp/present-state.json`` when made for
    these records and this bar (a campaign run with the recorder keeps them at once); otherwise the
    campaign is rerun (into ``camp/present-rerun``, removed after) with the recorder, its records
    checked equal to ``camp``'s; its feature store becomes ``camp``'s when ``camp`` has none (the
    committed study keeps records, not stores)."""
    import shutil

    from rush.contention.campaign import run_campaign

    path = camp / ANSWERS
    if path.is_file() and (camp / "store.db").is_file():
        kept = json.loads(path.read_text())
        if kept.get("key") == _key(camp, thresholds):
            return {k: bool(v) for k, v in kept["answers"].items()}
    rerun = camp / "present-rerun"
    recorder = PresentStateRecorder(thresholds)
    try:
        run_campaign(rerun, hours, seed, "present-state answers", fabric, noise, oracle=recorder)
        if _runs(rerun / "records.jsonl") != _runs(camp / "records.jsonl"):
            raise ConfigError(
                "rerunning the campaign with the present-state recorder gave other records",
                where=str(camp / "records.jsonl"),
                fix="rerun the study with --fresh (the campaign on disk was made otherwise)",
            )
        if not (camp / "store.db").is_file():  # a committed campaign keeps its records, not its store
            for name in ("store.db", "store.db-wal", "store.db-shm"):
                if (rerun / name).is_file():
                    (rerun / name).replace(camp / name)
    finally:
        shutil.rmtree(rerun, ignore_errors=True)
    save_answers(camp, thresholds, recorder.answers)
    return recorder.answers


def relabel_present_state(dataset: Any, answers: dict[str, bool]) -> Any:
    """The dataset with each row's label replaced by the present-state oracle's answer at its run's
    start: class "variation" when yes; otherwise "none", or "little" for a run that varied anyway."""
    missing = [str(j) for j in dataset.job_ids if str(j) not in answers]
    if missing:
        raise ConfigError(
            f"{len(missing)} control run(s) have no present-state answer (first {missing[0]})",
            where=ANSWERS,
            fix="delete it and rerun the study (it was made for another campaign)",
        )
    label = np.array([answers[str(j)] for j in dataset.job_ids], dtype=bool)
    varied = dataset.y_binary.astype(bool)
    dataset.y_binary = label.astype(np.int64)
    dataset.y_class = np.where(label, 2, np.where(varied, 1, 0)).astype(np.int64)
    dataset.description = {**dataset.description, "label": "present-state"}
    return dataset
