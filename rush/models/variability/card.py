"""The variability model's card: what the live predictor needs, typed and bounded (see model_card).

Every feature must be one the feature code can make (:func:`known_feature`): a counter of the
job's or all nodes (``<scope>_<stat>_<metric>``), the job's placement, the probe or the
workload type. A card naming another is refused before the model loads; after loading,
:func:`rush.models.variability.train.load_variability_model` checks the card's features against
the ones the pickled pipeline was fitted on (``rush_features_``, saved inside it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rush.models.model_card import ModelCard, Name, _finite
from rush.models.variability.features import known_feature

CLASS_NAME = Literal["none", "little", "variation"]


class VariabilityCard(ModelCard):
    model: Literal["variability"]
    estimator: Literal["extra_trees", "random_forest", "knn", "adaboost"]
    classes: list[int] = Field(min_length=2, max_length=3)
    class_names: list[CLASS_NAME] = Field(min_length=2, max_length=3)
    variation_classes: list[CLASS_NAME] = Field(min_length=1, max_length=3)
    window: float = Field(gt=0, le=30 * 86400)
    # P(variation classes) at or above which a job is flagged (chosen on held-out data); None:
    # the most probable class decides.
    flag_threshold: float | None = Field(None, ge=0.0, le=1.0)
    scope: Literal["job", "all", "both"]
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    seed: int = Field(ge=0)
    apps: list[Name] = Field(min_length=2, max_length=1024)

    _finite_window = field_validator("window")(_finite)

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
