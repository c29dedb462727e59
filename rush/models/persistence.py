"""Model files: joblib plus a JSON metadata sidecar, verified before loading.

``save_model(model, path, metadata)`` writes ``path`` (joblib) and ``path + ".json"``
holding the caller's metadata (feature list, divider, training window, ...) plus the
library versions, the creation time and the model file's sha256.

``load_model(path, expected_features)`` reads the sidecar and checks the sha256 *before*
unpickling, so a truncated, corrupted or swapped file is never loaded; it refuses a model
trained with other features than the caller will feed it, or pickled by another
scikit-learn version (whose pickles scikit-learn does not support). Every refusal is a
:class:`~rush.errors.ModelError` naming the file and the fix; never a wrong prediction.

The sha256 guards integrity, not authenticity: whoever can write both files can make them
agree. Keep model directories writable only by the scheduler's account.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from rush.errors import ModelError

DEFAULT_FIX = "retrain: rush train runtime-class TRACE --out MODEL"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def save_model(model: Any, path: str | Path, metadata: dict) -> dict:
    """Write the model and its sidecar (both atomically); return the sidecar's content."""
    import joblib

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    joblib.dump(model, tmp)
    meta = dict(metadata)
    meta.setdefault("features", [])
    meta["versions"] = library_versions()
    meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["sha256"] = file_sha256(tmp)
    side = sidecar_path(path)
    side_tmp = side.with_name(side.name + ".tmp")
    side_tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=_jsonable))
    os.replace(tmp, path)
    os.replace(side_tmp, side)
    return meta


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def load_model(
    path: str | Path, expected_features: list[str] | None = None, fix: str = DEFAULT_FIX
) -> tuple[Any, dict]:
    """Verify and load a model; raise ModelError with the place and the fix otherwise."""
    import joblib
    import sklearn

    path = Path(path)
    if not path.is_file():
        raise ModelError("model file not found", where=str(path), fix=fix)
    side = sidecar_path(path)
    try:
        meta = json.loads(side.read_text())
    except FileNotFoundError:
        raise ModelError("the metadata sidecar is missing", where=str(side), fix=fix) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read the metadata sidecar: {exc}", where=str(side), fix=fix) from exc
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"the metadata sidecar is not JSON ({exc.msg})", where=f"{side}:{exc.lineno}", fix=fix
        ) from exc
    if not isinstance(meta, dict) or "sha256" not in meta:
        raise ModelError("the metadata sidecar has no sha256", where=str(side), fix=fix)
    actual = file_sha256(path)
    if meta["sha256"] != actual:
        raise ModelError(
            f"sha256 mismatch: the sidecar says {meta['sha256']}, the file is {actual}; refusing to load it",
            where=str(path),
            fix=fix,
        )
    if expected_features is not None and list(meta.get("features", [])) != list(expected_features):
        raise ModelError(
            f"the model was trained on features {meta.get('features')} "
            f"but this configuration uses {list(expected_features)}",
            where=str(side),
            fix=fix + " (with the current rush version)",
        )
    trained_with = meta.get("versions", {}).get("scikit-learn")
    if trained_with is not None and _minor(trained_with) != _minor(sklearn.__version__):
        raise ModelError(
            f"the model was pickled by scikit-learn {trained_with}, this is {sklearn.__version__}; "
            "scikit-learn does not support loading pickles across versions",
            where=str(path),
            fix=fix,
        )
    try:
        model = joblib.load(path)
    except Exception as exc:  # unpickling failures come in many types
        raise ModelError(f"cannot load the model: {exc}", where=str(path), fix=fix) from exc
    return model, meta
