"""The studies' own cache of walk-forwards (pickles under ``RUSH_CACHE`` or ~/.cache/rush).

A pickle runs code when loaded, so a cache entry is unpickled only after the check a model file
gets (:func:`rush.models.trust.check_trusted`: the file and every directory above it owned by
root or the user running the study, writable by no one else). A study never unpickles a path
given on its command line; it names a trace and reads its own entry.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any

from rush.errors import ModelError
from rush.models.trust import check_trusted
from rush.output_file import replace_file


def cache_folder(kind: str) -> Path:
    """``$RUSH_CACHE/<kind>`` (default ``~/.cache/rush/<kind>``)."""
    return Path(os.environ.get("RUSH_CACHE", Path.home() / ".cache" / "rush")) / kind


def trusted_folder(kind: str) -> Path:
    """:func:`cache_folder`, after the trust check if it exists: for caches that unpickle their
    own entries (joblib's ``Memory``), whose folder others must not be able to write."""
    folder = cache_folder(kind)
    if folder.exists():
        _check(folder)
    return folder


def _exit(message: str) -> None:
    # exit 2, the configuration-error status: the fix is the user's (a mode, a stale file)
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _check(path: Path) -> None:
    try:
        check_trusted(path)
    except ModelError as exc:
        _exit(str(exc))


# what a truncated or foreign file raises when unpickled (a killed run, a disk filled up, an
# entry written by other versions of the classes it holds)
DAMAGED = (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError, ValueError)


def load_entry(path: Path) -> Any:
    """The object cached at ``path``, after the trust check; a clear exit 2 if others could have
    replaced it or it cannot be read whole."""
    _check(path)
    try:
        return pickle.loads(path.read_bytes())
    except DAMAGED as exc:
        _exit(
            f"{path}: the study cache entry cannot be read ({type(exc).__name__}: {exc}); "
            f"remove it (rm {path}) and the study recomputes it"
        )


def store_entry(path: Path, value: Any) -> None:
    """Write ``value`` to ``path`` whole (a temporary file renamed over it), readable by its
    owner and group only: the next load checks who may have written it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "wb") as f:
        f.write(pickle.dumps(value))
    replace_file(tmp, path)
