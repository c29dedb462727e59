"""The model card: the JSON sidecar beside every model file, validated before the model loads.

Every key has a type and a bound (strings, lists), so a hand-edited, truncated or hostile
card is refused with the key's name instead of failing later (or never) inside a pickle.
:class:`ModelCard` is what every model file has; :class:`RuntimeClassCard` adds what the
runtime-class pipeline needs to be used live: the divider, the time base (absolute Unix
seconds, calendar features in ``time_base.timezone``) and the kind of user keys.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

Name = Annotated[str, StringConstraints(max_length=128)]
Text = Annotated[str, StringConstraints(max_length=4096)]
MAX_CARD_BYTES = 1 << 20  # a card is a few kB; a larger file is refused unread


class _Strict(BaseModel):
    # Strict: "600" is not a divider, 5 is not a feature list. Unknown keys are kept (notes).
    model_config = ConfigDict(strict=True, extra="allow")


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class Versions(_Strict):
    rush: Name
    numpy: Name
    scikit_learn: Name = Field(alias="scikit-learn")


class TrainingWindow(_Strict):
    trace: Text
    jobs: int = Field(ge=1)
    first_submit: float  # Unix seconds
    last_submit: float
    # rush train runtime-quantiles --before / --time-scale (rush.models.training_cut): trained
    # only on the jobs finished by ``before`` (trace seconds), times divided by ``time_scale``.
    before: float | None = None
    time_scale: float = Field(default=1.0, gt=0)

    _finite_times = field_validator("first_submit", "last_submit")(_finite)


class ModelCard(_Strict):
    # Per top-level key, how to correct it by hand (shown before the retrain fix when it is wrong).
    fixes: ClassVar[dict[str, str]] = {}

    model: Name
    features: list[Name] = Field(min_length=1, max_length=1024)
    classes: list[int | Name] = Field(min_length=1, max_length=1024)
    versions: Versions
    created: Name
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    training_window: TrainingWindow


class TimeBaseCard(_Strict):
    base: Literal["unix-epoch-seconds"]
    unix_start: float
    unix_start_known: bool
    timezone: Name | None
    utc_offset: float = Field(ge=-18 * 3600, le=18 * 3600)
    zone_source: Name

    _finite_start = field_validator("unix_start")(_finite)


class RuntimeClassCard(ModelCard):
    model: Literal["runtime-class"]
    divider: float = Field(gt=0)
    mode: Literal["weekly", "live"]
    estimator: Name
    time_base: TimeBaseCard
    user_key_kind: Literal["name", "trace-id"]  # rush.models.users.USER_KEY_KINDS

    _finite_divider = field_validator("divider")(_finite)


def card_problems(card: type[ModelCard], data: Any) -> list[str]:
    """Problems of ``data`` as a ``card``, each naming the key ([] when valid).

    Values are never echoed: a hostile card could hold megabytes in one string."""
    if not isinstance(data, dict):
        return [f"the card is a JSON {type(data).__name__}, not an object"]
    try:
        card.model_validate(data)
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors(include_input=False, include_url=False)
        ]
    return []
