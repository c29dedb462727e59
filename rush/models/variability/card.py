"""The variability model's card: what the live predictor needs, typed and bounded (see model_card).

Every feature must be one the feature code can make (:func:`known_feature`): a counter of the
job's or all nodes (``<scope>_<stat>_<metric>``), the job's placement, the probe or the
workload type. A card naming another is refused before the model loads; after loading,
:func:`rush.models.variability.train.load_variability_model` checks the card's features against
the ones the pickled pipeline was fitted on (``rush_features_``, saved inside it).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from rush.models.model_card import ModelCard, Name, _finite
from rush.models.variability.features import known_feature

CLASS_NAME = Literal["none", "little", "variation"]
MAX_SIZES = 1024  # job sizes in a per-size threshold table (a campaign runs a handful)
JSON_TYPES = {str: "string", bool: "boolean", list: "array", dict: "object", type(None): "null"}


class VariabilityCard(ModelCard):
    model: Literal["variability"]
    estimator: Literal["extra_trees", "random_forest", "knn", "adaboost"]
    classes: list[int] = Field(min_length=2, max_length=3)
    class_names: list[CLASS_NAME] = Field(min_length=2, max_length=3)
    variation_classes: list[CLASS_NAME] = Field(min_length=1, max_length=3)
    window: float = Field(gt=0, le=30 * 86400)
    # P(variation classes) at or above which a job is flagged (chosen on held-out data); None:
    # the most probable class decides.
    flag_threshold: float | None = Field(None, ge=0.0, le=1.0, allow_inf_nan=False)
    # Per job size in nodes ("16", as JSON keys are strings), the threshold that size's jobs take
    # (rush.core.variation_flag: the nearest size's); None: the one threshold for every size.
    flag_threshold_by_size: dict[str, float] | None = None
    scope: Literal["job", "all", "both"]
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    seed: int = Field(ge=0)
    apps: list[Name] = Field(min_length=2, max_length=1024)
    # The label learned (rush.contention.labels); absent in cards before round six: "variation".
    label: Literal["variation", "present-state"] = "variation"

    _finite_window = field_validator("window")(_finite)

    fixes: ClassVar[dict[str, str]] = {
        "flag_threshold": "the card's flag_threshold is a probability, a number in [0, 1]",
        "label": 'the card\'s label is "variation" or "present-state" (rush.contention.labels), or absent',
        "flag_threshold_by_size": (
            'write flag_threshold_by_size as {"<nodes>": <threshold>, ...}: each size a whole number '
            'of nodes >= 1 as a string ("16"), each threshold a number in [0, 1]'
        ),
    }

    @field_validator("flag_threshold_by_size", mode="before")
    @classmethod
    def _size_table(cls, table: Any) -> Any:
        """Each size a positive whole number of nodes, each threshold a probability; the offending
        size is named (cut short: a hostile card could hold megabytes in one key)."""
        if table is None:
            return None
        if not isinstance(table, dict):
            kind = JSON_TYPES.get(type(table), type(table).__name__)
            raise ValueError(f"must be an object (size -> threshold), not a JSON {kind}")
        if len(table) > MAX_SIZES:
            raise ValueError(f"{len(table)} sizes: at most {MAX_SIZES}")
        for size, threshold in table.items():
            text = str(size)
            name = repr(text[:20] + ("..." if len(text) > 20 else ""))
            if not re.fullmatch(r"[1-9][0-9]{0,6}", text):
                raise ValueError(f"size {name} is not a whole number of nodes >= 1")
            if isinstance(threshold, bool) or not isinstance(threshold, int | float):
                kind = JSON_TYPES.get(type(threshold), type(threshold).__name__)
                raise ValueError(f"the threshold of size {name} is a JSON {kind}, not a number")
            if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
                raise ValueError(
                    f"the threshold of size {name} is {threshold!r}, not a probability in [0, 1]"
                )
        return table

    @field_validator("features")
    @classmethod
    def _known(cls, features: list[str]) -> list[str]:
        unknown = [f for f in features if not known_feature(f)]
        if unknown:
            raise ValueError(
                f"unknown feature(s) {unknown[:5]}: not a counter (job_|all_<min|max|mean>_<metric>), "
                "placement, probe or workload-type feature"
            )
        if len(set(features)) != len(features):
            raise ValueError("a feature is listed twice")
        return features
