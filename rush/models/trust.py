"""Who may have written a model file: refuse one that others could have replaced (sshd's StrictModes).

A joblib model is a pickle: loading it runs whatever code it names. Its sidecar's sha256 shows
the file is the one the card describes, not who wrote the pair. So before a model is unpickled,
:func:`check_trusted` requires, of the model file, its card and every directory on their paths
up to ``/`` (as given and with symlinks resolved):

* owned by root or by the user rush runs as (the daemon's account);
* not writable by group or others.

One exception, as for ``/tmp``: a directory with the sticky bit that is owned by root or rush's
user may be world-writable, since others cannot rename or delete the entries they do not own
(the entries below it are checked in turn).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from rush.errors import ModelError


def _chain(path: Path) -> Iterator[Path]:
    """``path`` then each directory above it up to the root."""
    yield path
    yield from path.parents


def trust_problem(
    path: Path, info: os.stat_result, owners: frozenset[int], is_target: bool
) -> tuple[str, str] | None:
    """(what is wrong, the fix) for one path on the way to a model, or None if it is trusted."""
    if info.st_uid not in owners:
        return f"owned by uid {info.st_uid}", f"chown {os.geteuid()} {path} (root or the user rush runs as)"
    writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    sticky_dir = not is_target and stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
    if writable and not sticky_dir:
        who = {stat.S_IWGRP: "group", stat.S_IWOTH: "others"}.get(writable, "group and others")
        return f"writable by {who}", f"chmod go-w {path}"
    return None


def check_trusted(
    *files: str | Path,
    owners: frozenset[int] | None = None,
    stat_path: Callable[[Path], os.stat_result] = os.stat,
) -> None:
    """Raise :class:`ModelError` unless every file and every directory above it is owned by
    root or rush's user (``owners``) and writable by no one else (module docstring)."""
    owners = owners if owners is not None else frozenset({0, os.geteuid()})
    seen: set[Path] = set()
    for file in files:
        given = Path(os.path.abspath(file))
        for start in (given, given.resolve()):
            for k, place in enumerate(_chain(start)):
                if place in seen:
                    continue
                seen.add(place)
                try:
                    info = stat_path(place)
                except OSError as exc:
                    raise ModelError(
                        f"cannot check who may write the model: {exc.strerror or exc}", where=str(place)
                    ) from None
                problem = trust_problem(place, info, owners, is_target=k == 0)
                if problem is not None:
                    what, fix = problem
                    kind = "the model file" if k == 0 else "a directory above the model"
                    raise ModelError(
                        f"refusing to load a model others could have replaced: {kind} is {what} "
                        f"(a model is a pickle and runs code when loaded)",
                        where=str(place),
                        fix=fix,
                    )
