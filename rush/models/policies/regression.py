"""Regression-obtained heuristics: weighted least squares over polynomial templates in (p, q, r).

Templates (Rosa et al., JSSPP 2023, after Carastan-Santos & de Camargo, SC'17), over the scaled
features x = p/s_p, y = q/s_q, z = r/s_r (s_* = the training set's maxima, so every feature lies
in (0, 1]), each with an intercept (term (0, 0, 0), which shifts every key alike and orders
nothing):

=====  ===========================================================  =====
name   terms x^a y^b z^c                                            count
=====  ===========================================================  =====
Lin    degree 1: x, y, z                                            3
Qdr    all monomials of degree 1..2: Lin + x², y², z², xy, xz, yz   9
Cub    all monomials of degree 1..3 (adds x³, x²y, xyz, ...)        19
Qua    all monomials of degree 1..4                                 34
=====  ===========================================================  =====

xy is the area factor p·q; the mixed terms with z are the area-like products with the submit
time. Fitting minimises sum_i w_i (score_i - θ·φ(x_i))² (``numpy.linalg.lstsq`` on the
rows scaled by sqrt(w_i)). The weight of a row is the inverse variance of its score estimate
(the trials give its standard error), normalised to mean 1 and capped at 10x the median so no
handful of near-noiseless rows decides the fit.

The variance inflation factor of term k is 1 / (1 - R²_k), R²_k that of the (unweighted) least
squares regression of term k's column on all the other columns with an intercept; > 5 is the
usual multicollinearity alarm. A term that is an exact linear combination of the others
(R²_k = 1 to rounding) has VIF = inf, and the fit says the design is singular: the
coefficients are then the minimum-norm solution, one of infinitely many.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

import numpy as np

from rush.core.learned import FEATURES, Heuristic
from rush.errors import ConfigError

TEMPLATES: dict[str, int] = {"Lin": 1, "Qdr": 2, "Cub": 3, "Qua": 4}
WEIGHT_CAP = 10.0
SINGULAR_R2 = 1.0 - 1e-10


def template_terms(name: str) -> tuple[tuple[int, int, int], ...]:
    """The template's monomials (a, b, c) over (p, q, r), by degree then lexicographically, no intercept."""
    if name not in TEMPLATES:
        raise ConfigError(
            f"unknown template {name!r}", where="template", fix=f"one of {', '.join(TEMPLATES)}"
        )
    degree = TEMPLATES[name]
    terms = [t for t in product(range(degree + 1), repeat=3) if 1 <= sum(t) <= degree]
    return tuple(sorted(terms, key=lambda t: (sum(t), tuple(-e for e in t))))


def term_name(term: tuple[int, int, int]) -> str:
    """``p^2*q`` style name of a monomial; ``1`` for the intercept."""
    parts = [f if e == 1 else f"{f}^{e}" for f, e in zip(FEATURES, term, strict=True) if e]
    return "*".join(parts) or "1"


def design(x: np.ndarray, terms: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    """Columns x^a y^b z^c of the scaled features ``x`` (n, 3), one per term."""
    exps = np.asarray(terms, dtype=np.int64).reshape(-1, 3)
    return np.prod(x[:, None, :] ** exps[None, :, :], axis=2)


def vif(columns: np.ndarray) -> np.ndarray:
    """Variance inflation factor of each column (intercept added to every auxiliary regression)."""
    n, k = columns.shape
    out = np.empty(k)
    ones = np.ones((n, 1))
    for j in range(k):
        target = columns[:, j]
        others = np.hstack([ones, np.delete(columns, j, axis=1)])
        coef, *_ = np.linalg.lstsq(others, target, rcond=None)
        resid = target - others @ coef
        total = float(np.sum((target - target.mean()) ** 2))
        if total == 0.0:  # a constant column is the intercept again
            out[j] = np.inf
            continue
        r2 = 1.0 - float(resid @ resid) / total
        out[j] = np.inf if r2 >= SINGULAR_R2 else 1.0 / (1.0 - r2)
    return out


def row_weights(stderr: np.ndarray) -> np.ndarray:
    """Inverse-variance weights, mean 1, capped at WEIGHT_CAP times the median (module docstring)."""
    se = np.asarray(stderr, dtype=np.float64)
    positive = se[se > 0]
    floor = float(np.median(positive)) / np.sqrt(WEIGHT_CAP) if len(positive) else 1.0
    w = 1.0 / np.maximum(se, floor) ** 2
    return w / w.mean()


@dataclass
class Fit:
    """One template's weighted least-squares fit."""

    template: str
    terms: tuple[tuple[int, int, int], ...]  # intercept first
    coefficients: np.ndarray
    vif: np.ndarray  # per term, NaN for the intercept
    scale: tuple[float, float, float]
    r2: float
    rows: int
    rank: int
    singular: bool
    messages: list[str] = field(default_factory=list)

    def heuristic(self, info: dict | None = None) -> Heuristic:
        return Heuristic(
            self.template,
            self.terms,
            tuple(float(c) for c in self.coefficients),
            self.scale,
            info=info,
        )

    def table(self) -> list[dict]:
        return [
            {
                "template": self.template,
                "term": term_name(t),
                "coefficient": float(c),
                # JSON has no infinity: a singular term's VIF is the string "inf".
                "vif": None if np.isnan(v) else ("inf" if np.isinf(v) else float(v)),
            }
            for t, c, v in zip(self.terms, self.coefficients, self.vif, strict=True)
        ]


def feature_scale(p: np.ndarray, q: np.ndarray, r: np.ndarray) -> tuple[float, float, float]:
    """Maxima of the features (1 where a feature is all zero, so the scale stays > 0)."""
    return tuple(float(m) if m > 0 else 1.0 for m in (np.max(p), np.max(q), np.max(r)))  # type: ignore[return-value]


def fit_template(
    name: str,
    p: np.ndarray,
    q: np.ndarray,
    r: np.ndarray,
    score: np.ndarray,
    weights: np.ndarray | None = None,
    scale: tuple[float, float, float] | None = None,
) -> Fit:
    """Fit template ``name`` to the rows (p, q, r) -> score by weighted least squares."""
    cols = [np.asarray(a, dtype=np.float64).ravel() for a in (p, q, r, score)]
    n = len(cols[0])
    if any(len(c) != n for c in cols):
        raise ConfigError("p, q, r and score differ in length", where="regression rows")
    if not all(np.all(np.isfinite(c)) for c in cols):
        raise ConfigError("a feature or score is NaN or infinite", where="regression rows")
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if len(w) != n or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ConfigError("weights must be finite, >= 0, one per row", where="regression weights")
    terms = template_terms(name)
    if n < len(terms) + 2:
        raise ConfigError(
            f"{n} rows for {len(terms) + 1} coefficients of {name}",
            where="regression rows",
            fix="score more pairs",
        )
    scale = scale or feature_scale(cols[0], cols[1], cols[2])
    x = np.column_stack(cols[:3]) / np.asarray(scale)
    body = design(x, terms)
    full = np.hstack([np.ones((n, 1)), body])
    root = np.sqrt(w)[:, None]
    coef, _, rank, _ = np.linalg.lstsq(full * root, cols[3] * root[:, 0], rcond=None)
    fitted = full @ coef
    mean = np.average(cols[3], weights=w) if w.sum() > 0 else float(cols[3].mean())
    total = float(np.sum(w * (cols[3] - mean) ** 2))
    r2 = 1.0 - float(np.sum(w * (cols[3] - fitted) ** 2)) / total if total > 0 else float("nan")
    factors = vif(body) if body.shape[1] > 1 else np.ones(1)
    singular = int(rank) < full.shape[1]
    messages = []
    if singular or np.any(np.isinf(factors)):
        dup = [term_name(t) for t, v in zip(terms, factors, strict=True) if np.isinf(v)]
        messages.append(
            f"{name}: singular design (rank {int(rank)} of {full.shape[1]} columns); "
            f"terms with infinite VIF: {', '.join(dup) or 'none'}. The coefficients are the "
            "minimum-norm solution, one of infinitely many: do not read them one by one"
        )
        singular = True
    return Fit(
        template=name,
        terms=((0, 0, 0), *terms),
        coefficients=coef,
        vif=np.concatenate([[np.nan], factors]),
        scale=scale,  # type: ignore[arg-type]
        r2=r2,
        rows=n,
        rank=int(rank),
        singular=singular,
        messages=messages,
    )
