"""The variability model's card: what the live predictor needs, typed and bounded (see model_card)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rush.models.model_card import ModelCard, Name, _finite

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
