"""LEARNED policies: a polynomial heuristic over (p, q, r) read from a small JSON file.

``--policy LEARNED:path/to/heuristic.json`` orders jobs by

    key(j) = sum_k  c_k * (p~/s_p)^a_k * (q/s_q)^b_k * (r/s_r)^c_k        smallest first

with p~ the runtime estimate (requested time; guarded at >= 1 like the other policies), q the
processors and r the submit time since the time origin (guarded at >= 1, as F1-F4's r). It is a
static key: it depends on the job only, so it is computed once per job (the simulator's
static keys, the live priority value fixed at submit).

The file (written by :mod:`rush.models.policies.regression`)::

    {"format": "rush-heuristic", "version": 1, "template": "Lin",
     "features": ["p", "q", "r"], "scale": {"p": 1e5, "q": 256, "r": 1e5},
     "terms": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
     "coefficients": [0.5, 0.2, 0.1, 0.3],
     "info": {...}}                                     # optional, free metadata, not used

Anything else is refused with a :class:`PolicyError` naming the file and the key: a missing or
unknown key, a non-finite number, a term list over :data:`MAX_TERMS`, an exponent over
:data:`MAX_EXPONENT`, a file over :data:`MAX_FILE_BYTES` or not a regular file, text that is not
JSON. Pure Python: importing it loads no numba.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from rush.errors import PolicyError

HEURISTIC_FORMAT = "rush-heuristic"
HEURISTIC_VERSION = 1
FEATURES: tuple[str, ...] = ("p", "q", "r")
MAX_FILE_BYTES = 64 * 1024
MAX_TERMS = 64  # a full degree-4 polynomial in 3 variables has 35
MAX_EXPONENT = 8
REQUIRED_KEYS = frozenset({"format", "version", "template", "features", "scale", "terms", "coefficients"})
OPTIONAL_KEYS = frozenset({"info"})
# Layout of the policy's weight array for the compiled kernels: a header, then 4 floats per term.
HEADER = 4  # n_terms, s_p, s_q, s_r
PER_TERM = 4  # a, b, c, coefficient

FIX = "write the file with `rush experiment regression` or follow the format in rush/core/learned.py"


@dataclass(frozen=True)
class Heuristic:
    """A validated polynomial heuristic; smaller keys run first."""

    template: str
    terms: tuple[tuple[int, int, int], ...]
    coefficients: tuple[float, ...]
    scale: tuple[float, float, float]
    info: dict | None = None

    def encode(self) -> tuple[float, ...]:
        """The flat weight vector read by :func:`rush.core.policies.priority_key`."""
        out = [float(len(self.terms)), *self.scale]
        for (a, b, c), coef in zip(self.terms, self.coefficients, strict=True):
            out += [float(a), float(b), float(c), float(coef)]
        return tuple(out)

    def to_json(self) -> dict:
        data = {
            "format": HEURISTIC_FORMAT,
            "version": HEURISTIC_VERSION,
            "template": self.template,
            "features": list(FEATURES),
            "scale": dict(zip(FEATURES, self.scale, strict=True)),
            "terms": [list(t) for t in self.terms],
            "coefficients": list(self.coefficients),
        }
        if self.info is not None:
            data["info"] = self.info
        return data


def _error(where: str, message: str) -> PolicyError:
    return PolicyError(message, where=where, fix=FIX)


def _finite(value: object, where: str) -> float:
    # bool is an int to Python: `true` must not become the number 1.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _error(where, f"expected a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise _error(where, f"{value!r} is not a finite number")
    return number


def parse_heuristic(data: object, where: str = "heuristic") -> Heuristic:
    """Validate a decoded JSON document; ``where`` names its source in errors."""
    if not isinstance(data, dict):
        raise _error(where, "the heuristic must be a JSON object")
    missing = sorted(REQUIRED_KEYS - data.keys())
    if missing:
        raise _error(where, f"missing key(s): {', '.join(missing)}")
    extra = sorted(str(k) for k in data.keys() - REQUIRED_KEYS - OPTIONAL_KEYS)
    if extra:
        raise _error(where, f"unknown key(s): {', '.join(extra)}")
    if data["format"] != HEURISTIC_FORMAT:
        raise _error(f"{where}: format", f"not a rush heuristic (format {data['format']!r:.40})")
    if isinstance(data["version"], bool) or data["version"] != HEURISTIC_VERSION:
        raise _error(f"{where}: version", f"version {data['version']!r:.40} is not {HEURISTIC_VERSION}")
    template = data["template"]
    if not isinstance(template, str) or not 0 < len(template) <= 32:
        raise _error(f"{where}: template", "the template must be a name of 1 to 32 characters")
    if data["features"] != list(FEATURES):
        raise _error(f"{where}: features", f"features must be {list(FEATURES)}")
    scale = data["scale"]
    if not isinstance(scale, dict) or sorted(scale) != sorted(FEATURES):
        raise _error(f"{where}: scale", f"scale must map exactly {', '.join(FEATURES)} to numbers > 0")
    scales = tuple(_finite(scale[f], f"{where}: scale.{f}") for f in FEATURES)
    if min(scales) <= 0:
        raise _error(f"{where}: scale", "every scale must be > 0")
    terms, coefs = data["terms"], data["coefficients"]
    if not isinstance(terms, list) or not isinstance(coefs, list):
        raise _error(where, "terms and coefficients must be lists")
    if not 0 < len(terms) <= MAX_TERMS:
        raise _error(f"{where}: terms", f"{len(terms)} terms; give 1 to {MAX_TERMS}")
    if len(coefs) != len(terms):
        raise _error(where, f"{len(terms)} terms but {len(coefs)} coefficients")
    parsed: list[tuple[int, int, int]] = []
    for k, term in enumerate(terms):
        at = f"{where}: terms[{k}]"
        if not isinstance(term, list) or len(term) != len(FEATURES):
            raise _error(at, "a term is a list of 3 exponents over (p, q, r)")
        for e in term:
            if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e <= MAX_EXPONENT:
                raise _error(at, f"exponents must be integers from 0 to {MAX_EXPONENT}")
        parsed.append((term[0], term[1], term[2]))
    if len(set(parsed)) != len(parsed):
        raise _error(f"{where}: terms", "a term appears twice; merge its coefficients")
    values = tuple(_finite(c, f"{where}: coefficients[{k}]") for k, c in enumerate(coefs))
    if not any(v != 0.0 for t, v in zip(parsed, values, strict=True) if t != (0, 0, 0)):
        raise _error(f"{where}: coefficients", "every non-constant coefficient is zero: it orders nothing")
    info = data.get("info")
    if info is not None and not isinstance(info, dict):
        raise _error(f"{where}: info", "info must be an object")
    return Heuristic(template, tuple(parsed), values, scales, info)  # type: ignore[arg-type]


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def heuristic_from_bytes(raw: bytes, where: str) -> Heuristic:
    """Validate a heuristic file's bytes (at most :data:`MAX_FILE_BYTES`); ``where`` names the
    file in errors. The file itself is read by the shell
    (:func:`rush.models.policies.heuristic_file.read_heuristic`): the core reads no files."""
    if len(raw) > MAX_FILE_BYTES:
        raise _error(where, f"over the {MAX_FILE_BYTES}-byte limit")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _error(where, f"not valid JSON ({str(exc)[:120]})") from None
    return parse_heuristic(data, where)
