"""Energy: power-profile classification of jobs (see :mod:`rush.energy.classify`)."""

from rush.energy.classify import (
    CLASSES,
    ProfileError,
    ProfileResult,
    ProfileThresholds,
    classify_power,
    classify_trace,
)

__all__ = [
    "CLASSES",
    "ProfileError",
    "ProfileResult",
    "ProfileThresholds",
    "classify_power",
    "classify_trace",
]
