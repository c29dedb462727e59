"""Which label a learned policy's model must have learned, and the recorder that makes the
present-state label (the study's side: :mod:`rush.studies.contention_labels`).

``variation``: "did the run vary"; ``present-state``: the present-state oracle's answer at the
run's start, "started now on these nodes, in the state of now, would it exceed its bar?" (a
simulator ground truth: on a real machine it would need a counterfactual).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LABELS: tuple[str, ...] = ("variation", "present-state")
# The label each learned policy's model must have learned (others: "variation").
POLICY_LABEL: dict[str, str] = {
    "RUSH-PRESENT-LABEL": "present-state",
    "RUSH-MOVE-PRESENT-LABEL": "present-state",
}
# prepare.json's model names: "all", "other4" learned "variation"; "present-all", "present-other4".
MODEL_PREFIX: dict[str, str] = {"present-state": "present-"}


def policy_label(policy: str) -> str:
    return POLICY_LABEL.get(policy, "variation")


def model_name(policy: str, scenario_model: str) -> str:
    """The prepared model (prepare.json's ``models`` key) a policy runs with for a scenario's model."""
    return MODEL_PREFIX.get(policy_label(policy), "") + scenario_model


def card_label(path: Path) -> str:
    """The label the model at ``path`` learned, read through its validated card (a truncated, binary
    or otherwise invalid card is refused with a ModelError naming the file and the fix; a card
    without ``label`` learned ``variation``: every card before round six)."""
    from rush.models.persistence import read_card
    from rush.models.variability.card import VariabilityCard
    from rush.models.variability.train import DEFAULT_FIX

    card = read_card(path, VariabilityCard, DEFAULT_FIX)
    return VariabilityCard.model_validate(card).label


def check_model_label(path: Path, policy: str) -> None:
    """Refuse a model whose card says it learned another label than ``policy`` expects."""
    from rush.models.variability.dataset import DatasetError

    label, wanted = card_label(path), policy_label(policy)
    if label != wanted:
        raise DatasetError(
            f"{policy} runs a model trained on the {wanted!r} label, this one learned {label!r}",
            where=f"{path}.json: label",
            fix=f"prepare the study with --label {wanted} (rush experiment variability)",
        )


class PresentStateRecorder:
    """An oracle for the campaign that notes the present-state oracle's answer for each job asked
    about (the last one: at the pass that started it) and never flags, so the campaign's decisions
    are those of a campaign without it."""

    def __init__(self, thresholds: dict[str, Any]) -> None:
        from rush.contention.oracles import PresentStateOracle

        self.present = PresentStateOracle(thresholds)
        self.answers: dict[str, bool] = {}

    def __call__(self, state: Any, asked: list) -> list[bool]:
        for (spec, _nodes), flag in zip(asked, self.present(state, asked), strict=True):
            self.answers[str(spec.job_id)] = bool(flag)
        return [False] * len(asked)
