"""Model files: joblib plus a JSON metadata sidecar, verified before loading.

``save_model(model, path, metadata)`` writes ``path`` (joblib) and ``path.json`` with the
feature list, the training window, library versions, the creation time and the file's
sha256. ``load_model(path, expected_features)`` checks the sidecar and the sha256 *before*
unpickling (a tampered or truncated file is never loaded) and refuses a model whose
features differ from what the caller will feed it.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from pathlib import Path
from typing import Any

from rush.errors import ModelError


def _sha256(path: Path) -> str:
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
        "rush": rush.__version__,
    }


def sidecar_path(path: str | Path) -> Path:
    return Path(str(path) + ".json")


def save_model(model: Any, path: str | Path, metadata: dict) -> dict:
    """Write the model and its sidecar; return the sidecar's content."""
    import joblib

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, path)
    meta = dict(metadata)
    meta.setdefault("features", [])
    meta["versions"] = library_versions()
    meta["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["sha256"] = _sha256(path)
    sidecar_path(path).write_text(json.dumps(meta, indent=2, sort_keys=True))
    return meta


def load_model(path: str | Path, expected_features: list[str] | None = None) -> tuple[Any, dict]:
    """Verify and load a model; raise ModelError with the place and the fix otherwise."""
    import joblib

    path = Path(path)
    retrain = "retrain it: rush train runtime-class TRACE --out MODEL"
    if not path.exists():
        raise ModelError("model file not found", where=str(path), fix=retrain)
    side = sidecar_path(path)
    try:
        meta = json.loads(side.read_text())
    except FileNotFoundError:
        raise ModelError("the metadata sidecar is missing", where=str(side), fix=retrain) from None
    except json.JSONDecodeError as exc:
        raise ModelError(
            f"the metadata sidecar is not JSON ({exc.msg})", where=f"{side}:{exc.lineno}", fix=retrain
        ) from exc
    actual = _sha256(path)
    if meta.get("sha256") != actual:
        raise ModelError(
            f"sha256 mismatch: the sidecar says {meta.get('sha256')}, the file is {actual}; refusing to load it",
            where=str(path),
            fix=retrain,
        )
    if expected_features is not None and list(meta.get("features", [])) != list(expected_features):
        raise ModelError(
            f"the model was trained on features {meta.get('features')} but this configuration uses {list(expected_features)}",
            where=str(side),
            fix=retrain + " with the current rush version",
        )
    try:
        model = joblib.load(path)
    except Exception as exc:  # unpickling failures come in many types
        raise ModelError(f"cannot load the model: {exc}", where=str(path), fix=retrain) from exc
    return model, meta
