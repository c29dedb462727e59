"""Policy names and codes: plain data, importable without numba.

``rush --help`` and the option checks of the command line need the list of policies; importing
:mod:`rush.core.policies` would load numba (about half a second) just to print it.
"""

from __future__ import annotations

# Feature order for LINEAR weights. ``fairshare`` is the site's fair-share factor in [0, 1]
# (Slurm's, flux-accounting's, or the simulator's decayed-usage one; 1: no usage), read by the
# shell; like every LINEAR term, the smaller key runs first, so ``fairshare=-w`` favours it.
LINEAR_FEATURES: tuple[str, ...] = ("q", "p", "wait", "rho", "expansion", "area", "r", "fairshare")
# A job whose fair-share factor the shell does not know counts as used exactly its share.
NEUTRAL_FAIRSHARE = 0.5

POLICY_CODES: dict[str, int] = {
    "FCFS": 0,
    "LCFS": 1,
    "SPF": 2,
    "LPF": 3,
    "SQF": 4,
    "LQF": 5,
    "SAF": 6,
    "LAF": 7,
    "SRF": 8,
    "LRF": 9,
    "SEXP": 10,
    "LEXP": 11,
    "WFP3": 12,
    "UNICEF": 13,
    "F1": 14,
    "F2": 15,
    "F3": 16,
    "F4": 17,
    "LIN": 18,
    "LINEAR": 19,
    # LEARNED:path: a polynomial over (p, q, r) from a JSON file (rush.core.learned).
    "LEARNED": 20,
    # The RJMS's own priority, highest first (Flux: urgency and priority plugins; Slurm: its
    # multifactor priority); live only, keys given by the shell (PendingJob.rjms_priority).
    "RJMS": 21,
}
# Policies whose key depends on the current time (wait); the others are sorted once.
DYNAMIC_CODES = frozenset({10, 11, 12, 13, 19})

BACKFILL_MODES: tuple[str, ...] = ("easy", "conservative", "none")
# How a running job's estimate is corrected once it outlives its predicted runtime
# (rush.core.runtime_predictions.running_estimate).
PREDICTION_CORRECTIONS: tuple[str, ...] = ("none", "request", "stepwise")
# How a queued job with predicted quantiles is projected in the start estimates
# (rush.core.remaining_runtime.rule_upper): L2, max(its mean, Q(0.75)) (issue 29, round 12), or
# T, L2 raised to the mean with the tail above the top predicted quantile at the request (round 30).
ESTIMATE_RULE_L2 = "L2"
ESTIMATE_RULE_T = "T"
ESTIMATE_RULES: tuple[str, ...] = (ESTIMATE_RULE_L2, ESTIMATE_RULE_T)
