"""Trace catalogue: Parallel Workloads Archive traces by name, cached and checksummed.

``rush/data/trace_manifest.tsv`` lists each known trace with its sha256 (copied from the
archive's cleaned logs as mirrored for this project). ``fetch(name)``:

1. finds the file name from a full name (``KTH-SP2-1996-2.1-cln.swf.gz``) or an alias
   (``KTH-SP2``, case-insensitive);
2. returns the cached copy (``platformdirs.user_cache_dir("rush")/traces``, or
   ``$RUSH_CACHE_DIR/traces``) if its size and sha256 match, without any copy or download;
3. otherwise copies it from the mirror directory (``RUSH_TRACE_MIRROR`` or ``mirror=``), or
   downloads ``{base}/l_<dir>/<file>`` from the Parallel Workloads Archive
   (``https://www.cs.huji.ac.il/labs/parallel/workload``; ``RUSH_TRACE_BASE_URL`` or
   ``base_url=`` overrides the base);
4. verifies the sha256 before the file takes its place in the cache, and refuses (and
   deletes) a mismatching copy.

``load_trace(spec)`` accepts a path (SWF, or sacct output detected from its content), a
catalogue name or ``lublin[:JOBS[:PROCS[:SEED]]]``: the embedded default workload, generated
in-process (Lublin–Feitelson batch model, default 10000 jobs, 256 processors, seed 1), no
download. Nothing is ever written into the repository.

Why not pooch: the traces come first from a local mirror directory (``RUSH_TRACE_MIRROR``),
and pooch's downloaders (``choose_downloader``) take http(s), ftp, sftp and doi URLs only, no
local path or ``file://``; the mirror copy would stay hand-written beside it. What pooch would
replace is one streamed ``requests.get`` into a temporary file (:func:`_download`), and its
cache layout and hash registry would be a second one beside ``trace_manifest.tsv`` (sizes,
job counts, aliases). So the fetch stays here: copy or download into a temporary file beside
the target, verify its sha256 (:func:`rush.hashing.file_sha256`), rename.
"""

from __future__ import annotations

import os
import shutil
import zlib
from pathlib import Path

from rush.errors import ConfigError, TraceFormatError, TraceNotFoundError
from rush.hashing import file_sha256
from rush.output_file import replace_file
from rush.workload.limits import MAX_PROCS, MAX_SEED, MAX_SYNTH_JOBS
from rush.workload.model import Trace
from rush.workload.trace_file import check_regular_file, normalise_text
from rush.workload.trace_manifest import CatalogueEntry, catalogue, lookup  # noqa: F401 (callers ask the catalogue)

PWA_BASE_URL = "https://www.cs.huji.ac.il/labs/parallel/workload"
LUBLIN_DEFAULT = (10_000, 256, 1)


def cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get("RUSH_CACHE_DIR", user_cache_dir("rush"))) / "traces"


def _make_cache(directory: Path) -> None:
    """Create the cache directory, or say which path is in the way and how to fix it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        writable = os.access(directory, os.W_OK | os.X_OK)
    except OSError as exc:  # a regular file where a directory should be, or no permission
        raise ConfigError(
            f"cannot use the trace cache {directory}: {exc.strerror or exc}",
            where=str(directory),
            fix="set RUSH_CACHE_DIR to a directory rush can write (or move the file in its way)",
        ) from None
    if not writable:
        raise ConfigError(
            f"the trace cache {directory} is not writable",
            where=str(directory),
            fix="set RUSH_CACHE_DIR to a directory rush can write",
        )


def _verify(path: Path, entry: CatalogueEntry, source: str) -> None:
    actual = file_sha256(path)
    if actual != entry.sha256:
        path.unlink(missing_ok=True)
        raise TraceFormatError(
            f"sha256 mismatch for {entry.file} from {source}: got {actual}, expected {entry.sha256}",
            where=source,
            fix="the copy is corrupt or a different version; fetch it again or fix the mirror",
        )


def _download(entry: CatalogueEntry, target: Path, base_url: str) -> str:
    """Download into a temporary file beside ``target``, verify, then rename; the URL."""
    import requests

    if entry.pwa_dir is None:
        raise TraceNotFoundError(
            f"{entry.file} is not on the Parallel Workloads Archive",
            where=entry.file,
            fix="set RUSH_TRACE_MIRROR to a directory that holds it, "
            "or generate a synthetic workload in-process: lublin:10000:256",
        )
    url = f"{base_url.rstrip('/')}/{entry.pwa_dir}/{entry.file}"
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        with requests.get(url, stream=True, timeout=60) as response:
            response.raise_for_status()
            with open(partial, "wb") as fh:
                for block in response.iter_content(1 << 20):
                    fh.write(block)
    except requests.RequestException as exc:
        partial.unlink(missing_ok=True)
        raise TraceNotFoundError(
            f"could not download {entry.file}: {exc}",
            where=url,
            fix="check the network, or set RUSH_TRACE_MIRROR to a local directory of traces",
        ) from exc
    _verify(partial, entry, url)
    replace_file(partial, target)
    return url


def _cached(target: Path, entry: CatalogueEntry) -> bool:
    return target.is_file() and target.stat().st_size == entry.bytes and file_sha256(target) == entry.sha256


def fetch(name: str, *, mirror: str | Path | None = None, base_url: str | None = None) -> Path:
    """The local path of catalogue trace ``name``, verified against its sha256 (module docstring)."""
    entry = lookup(name)
    target = cache_dir() / entry.file
    if _cached(target, entry):
        return target
    _make_cache(target.parent)
    mirror = mirror or os.environ.get("RUSH_TRACE_MIRROR")
    if mirror:
        source = Path(mirror) / entry.file
        if source.exists():
            # Copy beside the target, then rename: a concurrent reader never sees half a file.
            partial = target.with_name(f"{target.name}.{os.getpid()}.part")
            try:
                check_regular_file(source)
                shutil.copyfile(source, partial)
            except (OSError, shutil.SpecialFileError) as exc:
                partial.unlink(missing_ok=True)
                raise TraceNotFoundError(
                    f"cannot copy {entry.file} from the mirror ({exc})",
                    where=str(source),
                    fix="fix the mirror's copy (a readable regular file) or unset RUSH_TRACE_MIRROR",
                ) from exc
            _verify(partial, entry, str(source))
            replace_file(partial, target)
            return target
    _download(entry, target, base_url or os.environ.get("RUSH_TRACE_BASE_URL", PWA_BASE_URL))
    return target


def parse_lublin_spec(spec: str) -> tuple[int, int, int] | None:
    """``lublin[:JOBS[:PROCS[:SEED]]]`` -> (jobs, procs, seed), or None if not such a spec."""
    head, *args = spec.split(":")
    if head.lower() != "lublin":
        return None
    values = list(LUBLIN_DEFAULT)
    if len(args) > 3:
        raise TraceNotFoundError(
            f"bad synthetic spec {spec!r}", where="TRACE", fix="lublin[:JOBS[:PROCS[:SEED]]]"
        )
    upper = (MAX_SYNTH_JOBS, MAX_PROCS, MAX_SEED)
    for k, arg in enumerate(args):
        # isascii: str.isdigit also accepts "²", which int() refuses.
        if not (arg.isascii() and arg.isdigit()) or not (k == 2 or 0 < int(arg)) or int(arg) > upper[k]:
            raise TraceNotFoundError(
                f"bad synthetic spec {spec!r}",
                where="TRACE",
                fix=f"lublin[:JOBS[:PROCS[:SEED]]] with JOBS in 1..{MAX_SYNTH_JOBS}, "
                f"PROCS in 1..{MAX_PROCS}, SEED in 0..2**64-1",
            )
        values[k] = int(arg)
    return values[0], values[1], values[2]


def _local_path(spec: str) -> tuple[Path, bool]:
    """``spec`` as a local path and whether it exists; a path stat() cannot answer for (a name
    over NAME_MAX, ``~`` of an unknown user) is one that does not exist."""
    try:
        path = Path(spec).expanduser()
    except RuntimeError:  # ~user of no such user
        return Path(spec), False
    try:
        return path, path.exists()
    except OSError:  # ENAMETOOLONG: Path.exists answers False only for ENOENT-like errors
        return path, False


def is_local_file(spec: str) -> bool:
    """Whether ``spec`` names an existing file (``~`` expanded), never raising."""
    path, exists = _local_path(spec)
    return exists and path.is_file()


def resolve_trace(spec: str) -> Path:
    path, exists = _local_path(spec)
    if exists:
        return path
    if path.suffix in (".swf", ".gz", ".json", ".txt", ".csv") and (os.sep in spec or "/" in spec):
        raise TraceNotFoundError(f"no such trace file: {spec}", where="TRACE", fix="check the path")
    return fetch(spec)


def _sniff(path: Path) -> str:
    import gzip

    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(4096)
        except (OSError, EOFError, zlib.error):
            return "swf"  # read_swf reports the corruption
    text = normalise_text(head).lstrip()
    if text.startswith((b"{", b"[")):
        return "sacct-json"
    first = text.split(b"\n", 1)[0]
    if b"|" in first and not first.startswith(b";"):
        return "sacct-parsable"
    return "swf"


def load_trace(spec: str, strict: bool = False) -> Trace:
    """A path (SWF or sacct output), a catalogue name, or a ``lublin`` synthetic spec.

    Only regular files are read (a FIFO would block); a file with no job at all is a
    :class:`TraceFormatError` (an empty run would report all-NaN metrics with success).
    """
    lublin = parse_lublin_spec(spec)
    if lublin is not None:
        from rush.workload.lublin import lublin_generate

        jobs, procs, seed = lublin
        return lublin_generate(
            jobs, machine_procs=procs, seed=seed, job_types="both"
        )  # the reference generator's default: both streams
    path = resolve_trace(spec)
    check_regular_file(path)  # before sniffing: a FIFO would block the first read
    kind = _sniff(path)
    if kind.startswith("sacct"):
        from rush.workload.sacct import read_sacct

        trace = read_sacct(path)
    else:
        from rush.workload.swf import read_swf

        trace = read_swf(path, strict=strict)
    if len(trace) == 0:
        skipped = f"; skipped: {trace.skipped}" if trace.skipped else ""
        raise TraceFormatError(
            f"no jobs in the trace (read as {kind}{skipped})",
            where=str(path),
            fix="check that it is the right file: SWF has one line of 18 numbers per job; "
            "sacct output needs at least one job (rush trace info explains the formats)",
        )
    return trace
