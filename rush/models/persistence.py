"""Model files: joblib plus a JSON model card (sidecar), verified before loading.

``save_model(model, path, metadata, card)`` writes ``path`` (joblib) and ``path + ".json"``
holding the caller's metadata (features, classes, divider, training window, time base, ...)
plus the library versions, the creation time and the model file's sha256. The card is
validated (:mod:`rush.models.model_card`) before anything is written.

``load_model(path, card, expected_features)`` reads the card (at most 1 MiB), validates
every key, and checks the sha256 *before* unpickling, so a truncated, corrupted or swapped
file is never loaded; it refuses a model trained with other features than the caller will
feed it, or pickled by another scikit-learn version (whose pickles scikit-learn does not
support). Every refusal is a :class:`~rush.errors.ModelError` naming the file (and the card
key) and the fix; never a traceback, never a wrong prediction.

The sha256 guards integrity, not authenticity: whoever can write both files can make them
agree, and a pickle runs code when loaded. So ``load_model`` first refuses, like sshd's
StrictModes, a model file, a card or any directory above them (to ``/``) that is owned by
anyone but root or the user rush runs as, or writable by group or others
(:func:`rush.models.trust.check_trusted`; the fix is ``chmod go-w`` or ``chown``). Every model
rush loads (runtime classes, the variability predictor) comes through here.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

from rush.errors import ModelError
from rush.hashing import file_sha256
from rush.models.model_card import MAX_CARD_BYTES, ModelCard, card_problems
from rush.models.trust import check_trusted
from rush.output_file import check_output, replace_file

DEFAULT_FIX = "retrain: rush train runtime-class TRACE --out MODEL"


def library_versions() -> dict[str, str]:
    import joblib
    import numpy
    import sklearn

    import rush

    return {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scikit-learn": sklearn.__version__,
        "joblib": joblib.__version__,
        "rush": getattr(rush, "__version__", "unknown"),
    }


def sidecar_path(path: str | Path) -> Path:
    return Path(str(path) + ".json")


def save_model(
    model: Any, path: str | Path, metadata: dict, card: type[ModelCard] = ModelCard, fix: str = DEFAULT_FIX
) -> dict:
    """Write the model and its card (both atomically); return the card's content."""
    import joblib

    path = Path(path)
    if path.is_dir() or sidecar_path(path).is_dir():
        raise ModelError(
            "the model path is a directory", where=str(path), fix="give a file name, e.g. MODEL.joblib"
        )
    for target in (path, sidecar_path(path)):  # before the work: never over a device
        check_output(target, ModelError)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    side = sidecar_path(path)
    side_tmp = side.with_name(side.name + ".tmp")
    try:
        joblib.dump(model, tmp)
        meta = dict(metadata)
        meta["versions"] = library_versions()
        meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        meta["sha256"] = file_sha256(tmp)
        meta = json.loads(json.dumps(meta, default=_jsonable))  # numpy values to plain JSON
        problems = card_problems(card, meta)
        if problems:  # a bug of the caller, but never write a card that load_model refuses
            raise ModelError(f"invalid model card: {'; '.join(problems)}", where=str(side), fix=fix)
        side_tmp.write_text(json.dumps(meta, indent=2, sort_keys=True))
        replace_file(tmp, path)
        replace_file(side_tmp, side)
    finally:
        for leftover in (tmp, side_tmp):
            leftover.unlink(missing_ok=True)
    return meta


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def read_card(path: str | Path, card: type[ModelCard] = ModelCard, fix: str = DEFAULT_FIX) -> dict:
    """The model file's validated card (the model is not read)."""
    path = Path(path)
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except OSError as exc:  # e.g. ENAMETOOLONG: is_dir() only answers False for a missing path
        raise ModelError(f"cannot use the model path ({exc.strerror})", where=str(path), fix=fix) from None
    if is_dir:
        raise ModelError("the model path is a directory, not a model file", where=str(path), fix=fix)
    if not is_file:
        raise ModelError("model file not found", where=str(path), fix=fix)
    side = sidecar_path(path)
    try:
        if not side.is_file():
            raise FileNotFoundError
        if side.stat().st_size > MAX_CARD_BYTES:
            raise ModelError(
                f"the model card is larger than {MAX_CARD_BYTES >> 10} KiB; refusing to read it",
                where=str(side),
                fix=fix,
            )
        meta = json.loads(side.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError("the model card (metadata sidecar) is missing", where=str(side), fix=fix) from None
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"the model card is not JSON ({exc.msg})", where=f"{side}:{exc.lineno}", fix=fix
        ) from exc
    except (OSError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise ModelError(
            f"cannot read the model card: {type(exc).__name__}", where=str(side), fix=fix
        ) from exc
    problems = card_problems(card, meta)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        key = problems[0].split(":")[0]
        by_hand = card.fixes.get(key.split(".")[0])
        raise ModelError(
            f"invalid model card: {'; '.join(problems[:3])}{more}",
            where=f"{side}: {key}",
            fix=f"{by_hand}; or {fix}" if by_hand else fix,
        )
    return meta


def load_model(
    path: str | Path,
    expected_features: list[str] | None = None,
    fix: str = DEFAULT_FIX,
    card: type[ModelCard] = ModelCard,
) -> tuple[Any, dict]:
    """Verify and load a model; raise ModelError with the place and the fix otherwise.

    Before anything is unpickled: the model and its card must be trusted (owned by root or
    rush's user, neither they nor a directory above them writable by group or others: the
    module docstring), the card valid, the sha256 the card's, the features and the
    scikit-learn minor version the caller's."""
    import joblib
    import sklearn

    path = Path(path)
    meta = read_card(path, card, fix)
    side = sidecar_path(path)
    check_trusted(path, side)
    actual = file_sha256(path)
    if meta["sha256"] != actual:
        raise ModelError(
            f"sha256 mismatch: the card says {meta['sha256']}, the file is {actual}; refusing to load it",
            where=str(path),
            fix=fix,
        )
    if expected_features is not None and list(meta["features"]) != list(expected_features):
        raise ModelError(
            f"the model was trained on features {meta['features']} "
            f"but this version of rush uses {list(expected_features)}",
            where=f"{side}: features",
            fix=fix + " (with the current rush version)",
        )
    trained_with = meta["versions"]["scikit-learn"]
    if _minor(trained_with) != _minor(sklearn.__version__):
        raise ModelError(
            f"the model was pickled by scikit-learn {trained_with}, this is {sklearn.__version__}; "
            "scikit-learn does not support loading pickles across versions",
            where=f"{side}: versions.scikit-learn",
            fix=fix,
        )
    try:
        model = joblib.load(path)
    except Exception as exc:  # unpickling failures come in many types
        raise ModelError(
            f"cannot load the model ({type(exc).__name__}: {str(exc)[:200]})", where=str(path), fix=fix
        ) from exc
    return model, meta
