"""The sha256 of a file, the one helper for traces, models and datasets (foundation layer)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of the file at ``path``, read in blocks (hashlib.file_digest)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
