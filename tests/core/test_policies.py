"""Priority keys against their published formulas, and policy parsing errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.policies import POLICY_CODES, parse_policy, priority_key
from rush.errors import PolicyError

NOW, ORIGIN = 10_000.0, 0.0
SUBMIT, Q, P = 4_000.0, 16, 3_600.0
WAIT = NOW - SUBMIT


def key(name: str, weights=None, submit=SUBMIT, q=Q, p=P) -> float:
    policy = parse_policy(name)
    w = policy.weight_array() if weights is None else np.asarray(weights, float)
    return priority_key(policy.code, w, NOW, ORIGIN, submit, q, p)


FORMULAS = [
    ("FCFS", SUBMIT),
    ("LCFS", -SUBMIT),
    ("SPF", P),
    ("LPF", -P),
    ("SQF", Q),
    ("LQF", -Q),
    ("SAF", P * Q),
    ("LAF", -P * Q),
    ("SRF", P / Q),
    ("LRF", -P / Q),
    ("SEXP", (WAIT + P) / P),
    ("LEXP", -(WAIT + P) / P),
    ("WFP3", -((WAIT / P) ** 3) * Q),
    ("UNICEF", -WAIT / (math.log2(Q) * P)),
    ("F1", math.log10(P) * Q + 870 * math.log10(SUBMIT)),
    ("F2", math.sqrt(P) * Q + 2.56e4 * math.log10(SUBMIT)),
    ("F3", P * Q + 6.86e6 * math.log10(SUBMIT)),
    ("F4", P * math.sqrt(Q) + 5.31e5 * math.log10(SUBMIT)),
    ("LIN", 3.24e-2 + 1.15e-7 * P + 2.61e-5 * Q - 1.57e-7 * SUBMIT),
]


@pytest.mark.parametrize(("name", "expected"), FORMULAS)
def test_priority_formulas(name, expected):
    assert key(name) == pytest.approx(expected, rel=1e-12)


def test_every_policy_has_a_formula_test():
    # LINEAR's formula is checked by test_linear_weights_over_documented_features, LEARNED's by
    # tests/core/test_learned_policy.py (it needs a heuristic file), RJMS's (the RJMS's own
    # priority, no formula) by tests/core/test_rjms_policy.py.
    tested = {name for name, _ in FORMULAS} | {"LINEAR", "LEARNED", "RJMS"}
    assert tested == set(POLICY_CODES), f"policies without a formula test: {set(POLICY_CODES) - tested}"


def test_unicef_guards_single_processor():
    assert key("UNICEF", q=1) == pytest.approx(-WAIT / P)


def test_f_policies_guard_r_at_one():
    # A job submitted at the trace start (r = 0) uses log10(1) = 0.
    assert key("F1", submit=0.0) == pytest.approx(math.log10(P) * Q)


def test_linear_weights_over_documented_features():
    policy = parse_policy("LINEAR:q=2,p=0.5,wait=-1,rho=3,expansion=4,area=0.001,r=1e-6")
    expected = 2 * Q + 0.5 * P - WAIT + 3 * P / Q + 4 * (WAIT + P) / P + 0.001 * P * Q + 1e-6 * SUBMIT
    assert priority_key(policy.code, policy.weight_array(), NOW, ORIGIN, SUBMIT, Q, P) == pytest.approx(
        expected
    )
    assert policy.dynamic
    assert not parse_policy("LINEAR:q=1,p=1").dynamic


def test_dynamic_flags():
    assert parse_policy("wfp3").dynamic and parse_policy("UNICEF").dynamic
    assert not parse_policy("SPF").dynamic and not parse_policy("F2").dynamic


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("FIFO", "unknown policy 'FIFO'"),
        ("SPF:x=1", "takes no parameters"),
        ("LINEAR:speed=1", "bad LINEAR term"),
        ("LINEAR:q=fast", "not a number"),
        ("LINEAR:q=nan", "not a finite number"),
        ("LINEAR:p=inf", "not a finite number"),
        ("LINEAR:q=-1e999", "not a finite number"),
        ("LINEAR:", "at least one non-zero weight"),
        ("LINEAR:q=0,p=0", "at least one non-zero weight"),
        ("LINEAR:q", "bad LINEAR term"),
        ("LINEAR:=1", "bad LINEAR term"),
        ("", "unknown policy"),
        ("SPF\x00", "unknown policy"),
        ("F" * 10_000, "unknown policy"),
    ],
)
def test_bad_policy_names(text, fragment):
    with pytest.raises(PolicyError) as err:
        parse_policy(text)
    assert fragment in str(err.value)
    assert "--policy" in str(err.value)
