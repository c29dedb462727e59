"""The flag rule of RUSH: is a job, by its model's class probabilities, likely to suffer variation?

One rule for every shell: the live predictor (:class:`rush.planner.variation.LearnedVariationPredictor`,
used by the daemon and the Flux module) and the contention simulator's learned oracle
(:class:`rush.contention.oracles.LearnedOracle`) both flag through :func:`variation_flags`.

The rule, from the model card (chosen on held-out start decisions by ``rush train variability``):

1. the threshold: with a per-size table (``flag_threshold_by_size``: job size in nodes ->
   threshold), the threshold of the nearest size in the table (a tie goes to the smaller size:
   a 24-node job takes the 16-node threshold of {16, 32}); a job of unknown size, or no table,
   takes the card's one threshold (``flag_threshold``);
2. the flag: P(variation classes) at or above that threshold; with no threshold at all, the most
   probable class being a variation class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class VariationFlagRule:
    """``threshold``: P(variation classes) at or above which a job is flagged (None: the most
    probable class decides); ``by_size``: (nodes, threshold) pairs, sorted by nodes (empty: none)."""

    threshold: float | None = None
    by_size: tuple[tuple[int, float], ...] = ()

    @classmethod
    def of(
        cls, threshold: float | None, by_size: Mapping[str, float] | Mapping[int, float] | None = None
    ) -> VariationFlagRule:
        """The rule from a card's ``flag_threshold`` and ``flag_threshold_by_size`` (sizes as the
        card's JSON keys, "16", or as ints); the card has validated both
        (:class:`rush.models.variability.card.VariabilityCard`)."""
        pairs = tuple(sorted((int(k), float(v)) for k, v in (by_size or {}).items()))
        for nodes, value in pairs:
            if nodes < 1 or not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(
                    f"flag threshold {value!r} for {nodes} nodes: need nodes >= 1, 0 <= threshold <= 1"
                )
        return cls(None if threshold is None else float(threshold), pairs)

    def applied(self, nodes: int | None) -> tuple[float | None, int | None]:
        """The threshold of a job of ``nodes`` nodes (None: unknown size) and the table's size it
        was taken for (None: the one threshold)."""
        if not self.by_size or nodes is None:
            return self.threshold, None
        size, threshold = min(self.by_size, key=lambda pair: (abs(pair[0] - nodes), pair[0]))
        return threshold, size

    def threshold_for(self, nodes: int | None) -> float | None:
        """The threshold of a job of ``nodes`` nodes (None: unknown size)."""
        return self.applied(nodes)[0]

    def describe_for(self, classes: Sequence[str], nodes: int | None) -> str:
        """The rule applied to one job of ``nodes`` nodes in words, for the journal (``variation_rule``)."""
        p = f"P({'+'.join(classes)})"
        threshold, size = self.applied(nodes)
        if threshold is None:
            return f"most probable class in {list(classes)}"
        if size is None:
            return f"{p} >= {threshold:.4g}"
        return f"{p} >= {threshold:.4g} (the threshold of {size}-node jobs, the nearest size to {nodes})"

    def journal(self, classes: Sequence[str], nodes: int | None) -> dict[str, Any]:
        """What decided one job of ``nodes`` nodes, for its journal row: the rule in words, the
        threshold (absent: the most probable class decided) and the table's size it came from."""
        threshold, size = self.applied(nodes)
        out: dict[str, Any] = {"variation_rule": self.describe_for(classes, nodes)}
        if threshold is not None:
            out["variation_threshold"] = threshold
        if size is not None:
            out["variation_threshold_nodes"] = size
        return out


def variation_flags(
    rule: VariationFlagRule,
    p_variation: np.ndarray,
    most_probable_is_variation: np.ndarray,
    nodes: Sequence[int | None],
) -> list[bool]:
    """One flag per job: ``p_variation[k]`` (the sum of its variation classes' probabilities)
    against the threshold of its size ``nodes[k]``, or, with no threshold,
    ``most_probable_is_variation[k]``."""
    threshold = {n: rule.threshold_for(n) for n in set(nodes)}  # a pass asks about a few sizes
    return [
        bool(top) if threshold[n] is None else p >= threshold[n]  # type: ignore[operator]
        for p, top, n in zip(p_variation.tolist(), most_probable_is_variation.tolist(), nodes, strict=True)
    ]
