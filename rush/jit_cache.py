"""numba's on-disk cache of rush's compiled kernels: is it warm, and fill it (``rush warmup``).

The scheduling core and the SWF parser are compiled by numba on first use (about half a
minute) and cached in one directory per version of the kernel sources
(:func:`configure_numba_cache`, called the moment numba is first imported, see
:func:`configure_when_numba_is_imported`). Later runs load them in a fraction of a second. A first run on a cold cache would otherwise sit silently
at 0 %; the command line says it is compiling instead, and the set-up scripts run
``rush warmup`` so that users never see it.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TextIO

CACHE_PREFIX = "rush-kernels-"
# A module defines kernels when a line starts with @njit / @numba.njit / @jit (with arguments or not).
_DECORATOR = re.compile(rb"^[ \t]*@(?:numba\.)?n?jit\b", re.MULTILINE)

# The compiled functions called from Python by `rush simulate/compare` (their callees are
# compiled into them, so one warm entry point needs no further compilation).
SIMULATION_ENTRY_POINTS: tuple[tuple[str, str], ...] = (
    ("rush.workload.swf_fast", "parse_swf_numbers"),
    ("rush.core.ordering", "static_keys"),
    ("rush.simulator.loop", "run_simulation"),
)
FIRST_COMPILE_SECONDS = 30  # measured: 25-35 s on a 2-core machine


def kernel_sources_digest(root: Path | None = None) -> str:
    """sha256 over every module of the package that defines numba kernels (path and content)."""
    import hashlib

    root = root or Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        if _DECORATOR.search(data):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + data)
    return digest.hexdigest()[:16]


# Where configure_numba_cache remembers the digest of each state of the sources (one small file
# per state, named after the sources' paths, sizes and modification times).
DIGESTS_DIR = "source-digests"


def remembered_sources_digest(base: Path, root: Path | None = None) -> str:
    """:func:`kernel_sources_digest`, remembered under ``base`` per state of the sources.

    Reading and hashing every source costs ~0.012 s per process; their paths, sizes and
    modification times (one ``stat`` each, ~0.001 s) name the state instead, and the digest
    of a state already seen is read back. Any edit changes a file's modification time, so it
    is a new state. A memo that cannot be read or written is recomputed.
    """
    import hashlib

    root = root or Path(__file__).resolve().parent
    state = hashlib.sha256()
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                stat = os.stat(path)
                state.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    memo = Path(base) / DIGESTS_DIR / state.hexdigest()[:32]
    try:
        remembered = memo.read_text()
        if re.fullmatch(r"[0-9a-f]{16}", remembered):
            return remembered
    except OSError:
        pass
    digest = kernel_sources_digest(root)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        partial.write_text(digest)
        os.replace(partial, memo)
    except OSError:
        pass  # a read-only cache: the digest is computed each time
    return digest


def configure_numba_cache(environ: os._Environ | dict = os.environ) -> str | None:
    """Point numba's cache at a directory named after the kernels' sources; return it.

    numba keys a cached function on its *own* file only: after an edit to
    ``rush/core/easy.py`` alone (a `git pull`, an upgrade), ``run_simulation`` in
    ``rush/simulator/loop.py`` would load its old machine code, old EASY pass included, without a
    word. One directory per version of all kernel sources makes any such edit a cold cache.
    The base is ``NUMBA_CACHE_DIR`` when set (e.g. the systemd unit's), else
    ``$RUSH_CACHE_DIR/numba`` (default ``~/.cache/rush/numba``), which also keeps cache files
    out of the installed package. numba reads the variable when imported; if it already is,
    its configuration is reloaded so that functions compiled from here on use the directory.
    """
    current = environ.get("NUMBA_CACHE_DIR")
    if current and Path(current).name.startswith(CACHE_PREFIX):
        base = Path(current).parent  # set by a parent rush process
    elif current:
        base = Path(current)
    else:
        cache_home = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = Path(environ.get("RUSH_CACHE_DIR") or os.path.join(cache_home, "rush")) / "numba"
    target = str(base / f"{CACHE_PREFIX}{remembered_sources_digest(base)}")
    if environ is os.environ:
        mark_cache_used(target)
    if environ.get("NUMBA_CACHE_DIR") != target:
        environ["NUMBA_CACHE_DIR"] = target
        # numba reads the variable when its config module is first imported (not yet while
        # numba's own __init__ starts, see _WrappedLoader).
        if "numba.core.config" in sys.modules and environ is os.environ:
            from numba.core import config

            config.reload_config()
    return target


class _NumbaFirstImport:
    """Finds nothing itself: wraps the loaders of ``numba`` (to configure the cache directory
    just before numba runs) and of numba's cffi support (to load it without cffi); made with
    ``watched``, of those modules instead (:func:`skip_numba_blas_probe_when_imported`)."""

    WATCHED = ("numba", "numba.core.typing.cffi_utils")

    def __init__(self, watched: tuple[str, ...] = WATCHED) -> None:
        self.waiting = {name for name in watched if name not in sys.modules}

    def find_spec(self, name: str, path=None, target=None):  # noqa: ANN001 - importlib's signature
        if name not in self.waiting:
            return None
        self.waiting.discard(name)
        if not self.waiting:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _WrappedLoader(spec.loader, name)
        return spec


class _WrappedLoader:
    # A loader by duck typing: importlib.abc would import importlib.resources, tempfile, shutil.
    def __init__(self, loader, name: str) -> None:  # noqa: ANN001
        self.loader, self.name = loader, name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # numba's own loader stays the module's loader (importlib.resources and pickling use it).
        module.__loader__ = module.__spec__.loader = self.loader
        if self.name == "numba":
            configure_numba_cache()
            if not lean_numba_wanted():
                self.loader.exec_module(module)
                return
            with _without_modules(_unused_by_numba_import()):
                _import_lazily("importlib.metadata")
                self.loader.exec_module(module)
            load_cached_kernels_without_refresh()
            return
        if self.name == BLAS_PROBE_MODULE:
            with _without_blas_probe():
                self.loader.exec_module(module)
            return
        with _without_cffi():
            self.loader.exec_module(module)


# The start-up trims below patch private numba functions (guarded: a numba of another shape is
# left alone). RUSH_LEAN_NUMBA=0 turns them all off, the escape hatch should a numba release
# misbehave under them; any other value, or none, leaves them on.
LEAN_NUMBA_VARIABLE = "RUSH_LEAN_NUMBA"


def lean_numba_wanted(environ: os._Environ | dict = os.environ) -> bool:
    """Whether numba is imported and its cached kernels loaded with rush's start-up trims."""
    return environ.get(LEAN_NUMBA_VARIABLE, "").strip() != "0"


# Config file numba reads with PyYAML from the working directory at import (numba.core.config).
NUMBA_CONFIG_FILE = ".numba_config.yaml"


def _unused_by_numba_import() -> tuple[str, ...]:
    """Modules numba imports when it is imported but rush never uses (~0.03 s of CPU per process).

    ``numba/__init__`` imports ``scipy`` only to check that its version is at least 1.0 (the
    ``scipy`` package itself, ~0.02 s; numba imports ``scipy.linalg`` on its own when a kernel
    that uses BLAS is compiled), and ``numba.core.config`` imports PyYAML (~0.01 s) only to read
    a ``.numba_config.yaml`` in the working directory: PyYAML stays importable when there is
    one there.
    """
    names = ["scipy"]
    if not os.path.exists(NUMBA_CONFIG_FILE):
        names.append("yaml")
    return tuple(names)


@contextmanager
def _without_modules(names: tuple[str, ...]) -> Iterator[None]:
    """Make ``import NAME`` fail at once while the block runs, for names nothing imported yet."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _import_lazily(name: str) -> None:
    """Import ``name`` as a module that loads itself at its first attribute access.

    ``numba.core.entrypoints`` imports ``importlib.metadata`` (~0.025 s of CPU with the modules
    it imports) only to scan the installed packages' entry points, which numba does when it
    compiles (rush's cached kernels load without it: :func:`load_cached_kernels_without_refresh`).
    Any other user of the module gets it whole at its first use.
    """
    if name in sys.modules:
        return
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


def load_cached_kernels_without_refresh() -> bool:
    """Load kernels from numba's cache without first loading every typing and lowering registry.

    numba's ``Cache.load_overload`` refreshes the CPU target context before it reads a cached
    function: it imports and installs the typing templates and lowering implementations of all
    of numba (typed containers, random, polynomials, jitclass...) and scans the installed
    packages' entry points, ~0.05 s of CPU per process (issue 31). Cached machine code needs
    none of it, only numba's runtime (NRT) symbols, initialised here. A cache miss compiles,
    and numba's compiler refreshes the contexts itself (``CompilerBase.__init__``), as does a
    lowering lookup that misses (``BaseContext.get_function``). Private numba API: if its
    shape differs, numba is left as it is (returns False).
    """
    from numba.core import caching, cpu
    from numba.core.runtime import rtsys

    cache = getattr(caching, "Cache", None)
    original = getattr(cache, "load_overload", None)
    if original is None or getattr(original, "_rush_lean", False):
        return original is not None
    if not all(hasattr(cache, name) for name in ("_load_overload", "_guard_against_spurious_io_errors")):
        return False
    if not hasattr(rtsys, "initialize"):
        return False

    def load_overload(self, sig, target_context):  # noqa: ANN001, ANN202 - numba's signature
        if type(target_context) is not cpu.CPUContext:
            return original(self, sig, target_context)
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    load_overload._rush_lean = True  # type: ignore[attr-defined]
    cache.load_overload = load_overload
    _skip_entry_points_before_rush_kernels()
    _rebuild_environments_without_imports()
    _parse_linking_bitcode_when_linked()
    return True


def _parse_linking_bitcode_when_linked() -> None:
    """Load a cached kernel's machine code without parsing the LLVM bitcode stored beside it.

    numba caches a function as its object code plus its bitcode, which it parses at every load
    (``CPUCodeLibrary._unserialize``: ~0.07 s for the replay's 2.6 MB ``run_simulation``) only
    to list the library's symbols and to link it into a kernel compiled later that calls it.
    Here the bitcode is parsed when that happens (``_get_module_for_linking``) or when a
    symbol is looked up that no parsed library defines; a loaded function's own entry point
    is known from its descriptor. Private numba API: if its shape differs, nothing changes.
    """
    import llvmlite.binding as ll
    from numba.core import codegen, cpu

    library, engine = codegen.CPUCodeLibrary, getattr(codegen, "JitEngine", None)
    needed = (
        (
            library,
            ("_unserialize", "_get_module_for_linking", "enable_object_caching", "_set_compiled_object"),
        ),
        (library, ("_finalize_final_module",)),
        (engine, ("is_symbol_defined", "_load_defined_symbols")),
        (cpu.CPUContext, ("get_executable",)),
    )
    if engine is None or not all(hasattr(owner, n) for owner, names in needed for n in names):
        return
    if getattr(library._get_module_for_linking, "_rush_lean", False):
        return
    unserialize, for_linking = library._unserialize.__func__, library._get_module_for_linking
    is_defined, get_executable = engine.is_symbol_defined, cpu.CPUContext.get_executable

    def _unserialize(cls, codegen_, state):  # noqa: ANN001, ANN202
        name, kind, data = state
        if kind != "object" or cls is not codegen.JITCodeLibrary:
            return unserialize(cls, codegen_, state)
        object_code, shared_bitcode = data
        self = codegen_.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(object_code)
        self._rush_linking_bitcode = shared_bitcode
        self._finalize_final_module()
        codegen_._engine.__dict__.setdefault("_rush_unparsed", []).append(self)
        return self

    def _get_module_for_linking(self):  # noqa: ANN001, ANN202
        bitcode = self.__dict__.pop("_rush_linking_bitcode", None)
        if bitcode is not None:
            self._shared_module = ll.parse_bitcode(bitcode)
            self._codegen._engine._load_defined_symbols(self._shared_module)
        return for_linking(self)

    def is_symbol_defined(self, name):  # noqa: ANN001, ANN202
        if is_defined(self, name):
            return True
        unparsed = self.__dict__.pop("_rush_unparsed", [])
        for lib in unparsed:
            lib._get_module_for_linking()
        return bool(unparsed) and is_defined(self, name)

    def _get_executable(self, library_, fndesc, env):  # noqa: ANN001, ANN202
        if "_rush_linking_bitcode" in library_.__dict__:  # its own wrapper, compiled into it
            library_.codegen._engine._defined_symbols.add(fndesc.llvm_cpython_wrapper_name)
        return get_executable(self, library_, fndesc, env)

    _get_module_for_linking._rush_lean = True  # type: ignore[attr-defined]
    library._unserialize = classmethod(_unserialize)
    library._get_module_for_linking = _get_module_for_linking
    engine.is_symbol_defined = is_symbol_defined
    cpu.CPUContext.get_executable = _get_executable


def _rebuild_environments_without_imports() -> None:
    """Load a cached kernel without importing the numba modules its environments name.

    numba caches, for every function compiled into a kernel (numba's own implementations of
    ``np.empty``, ``np.argsort``, ``min``... among them), an environment: that function's
    constants and its module's globals, which it imports to rebuild the environment at every
    load (``numba.core.environment._rebuild_env``). For the replay that is ``numba.np.arraymath``
    and ``numba.np.arrayobj`` with the modules they import, ~0.045 s of CPU (issue 31), for
    dictionaries that compiled code never reads: only object-mode code reads an environment's
    globals (``numba.core.pylowering``), and numba's implementations are compiled in nopython
    mode. A numba module not imported yet gets a dictionary with its name only (an environment
    is cached by that name, ``Environment.can_cache``); any other module is imported as numba
    does. Private numba API: if its shape differs, nothing changes.
    """
    from numba.core import environment

    original = getattr(environment, "_rebuild_env", None)
    memo = getattr(getattr(environment, "Environment", None), "_memo", None)
    if original is None or memo is None or getattr(original, "_rush_lean", False):
        return
    if not hasattr(environment, "lookup_environment"):
        return

    def _rebuild_env(modname, consts, env_name):  # noqa: ANN001, ANN202 - numba's signature
        if not isinstance(modname, str) or not modname.startswith("numba.") or modname in sys.modules:
            return original(modname, consts, env_name)
        env = environment.lookup_environment(env_name)
        if env is not None:
            return env
        env = environment.Environment({"__name__": modname})
        env.consts[:] = consts
        env.env_name = env_name
        memo[env_name] = env
        return env

    _rebuild_env._rush_lean = True  # type: ignore[attr-defined]
    # Saved kernels name it as numba's own (pickled by reference, found by name when loaded).
    _rebuild_env.__module__, _rebuild_env.__qualname__ = environment.__name__, original.__qualname__
    environment._rebuild_env = _rebuild_env


def _skip_entry_points_before_rush_kernels() -> None:
    """Call one of rush's kernels without first loading numba's extensions.

    numba's dispatcher loads the installed packages' ``numba_extensions`` entry points before
    its first call (``_compilation_chain_init_hook``), so that an extension's argument types
    are known: ~0.03 s with ``importlib.metadata``. rush's kernels take numpy arrays and
    numbers only, and a compile loads the extensions anyway (the context refresh). Other
    packages' kernels keep the hook.
    """
    from numba.core import dispatcher

    hook = getattr(dispatcher.Dispatcher, "_compilation_chain_init_hook", None)
    if hook is None or getattr(hook, "_rush_lean", False):
        return

    def init_hook(self) -> None:  # noqa: ANN001
        if not getattr(self.py_func, "__module__", "").startswith("rush."):
            hook(self)

    init_hook._rush_lean = True  # type: ignore[attr-defined]
    dispatcher.Dispatcher._compilation_chain_init_hook = init_hook


@contextmanager
def _without_cffi() -> Iterator[None]:
    """Load numba's cffi support without cffi (~0.07 s of pycparser per process).

    numba imports ``numba.core.typing.cffi_utils`` when it sets up its typing context (the
    first kernel a process loads); that module imports cffi only to type cffi functions
    passed to kernels (``SUPPORTED`` is false without it), and rush's kernels take none.
    cffi is hidden only while that one module is imported and only if nothing has imported
    it yet: any later ``import cffi`` (another library's) works as usual.
    """
    if "cffi" in sys.modules:
        yield
        return
    sys.modules["cffi"] = None  # type: ignore[assignment]  # makes `import cffi` fail at once
    try:
        yield
    finally:
        if sys.modules.get("cffi", 0) is None:
            del sys.modules["cffi"]


def configure_when_numba_is_imported() -> None:
    """Configure numba's cache now if numba is loaded, else the moment it is first imported.

    Called when ``rush`` is imported. Hashing the kernel sources costs ~10 ms per process:
    commands that never import numba (``rush explain --journal``, ``rush --help``) do not pay it.
    """
    if "numba" in sys.modules:
        configure_numba_cache()
        if lean_numba_wanted():
            load_cached_kernels_without_refresh()
    if "numba.core.typing.cffi_utils" in sys.modules:
        return
    watching = (f for f in sys.meta_path if isinstance(f, _NumbaFirstImport))
    if not any(f.waiting & set(_NumbaFirstImport.WATCHED) for f in watching):  # not the BLAS probe's
        sys.meta_path.insert(0, _NumbaFirstImport())


# A cache of other kernel sources is removed only when no process has used it this long: on a
# machine with several checkouts or installs (a test clone beside the site's daemon) each keeps
# its own directory, and a warmup in one must not throw away another's compiled kernels.
PRUNE_AFTER_IDLE_DAYS = 14
_LAST_USED = ".last-used"
_MARK_EVERY_SECONDS = 3600.0  # one stat per process; a write at most once an hour


def mark_cache_used(directory: str | Path, now: float | None = None) -> None:
    """Record that a process uses this cache directory (the marker's mtime), for the pruning."""
    import time

    marker = Path(directory) / _LAST_USED
    now = time.time() if now is None else now
    try:
        if now - marker.stat().st_mtime < _MARK_EVERY_SECONDS:
            return
    except OSError:
        pass
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        os.utime(marker, (now, now))
    except OSError:
        pass  # a read-only cache (a packaged install) is never pruned by its users anyway


def last_used(directory: Path) -> float:
    """When a process last used this cache: its marker, else its newest file (numba's writes)."""
    try:
        return (directory / _LAST_USED).stat().st_mtime
    except OSError:
        pass
    newest = directory.stat().st_mtime
    for path in directory.rglob("*"):
        try:
            newest = max(newest, path.stat().st_mtime)
        except OSError:
            continue
    return newest


def prune_old_caches(now: float | None = None, idle_days: float = PRUNE_AFTER_IDLE_DAYS) -> list[Path]:
    """Remove caches of other kernel-source versions next to the current one, once idle ``idle_days``."""
    import shutil
    import time

    current = os.environ.get("NUMBA_CACHE_DIR")
    if not current or not Path(current).name.startswith(CACHE_PREFIX):
        return []
    now = time.time() if now is None else now
    removed = []
    for other in Path(current).parent.glob(f"{CACHE_PREFIX}*"):
        if other.name == Path(current).name or not other.is_dir():
            continue
        if now - last_used(other) < idle_days * 86400:
            continue  # another checkout or install still uses it
        shutil.rmtree(other, ignore_errors=True)
        removed.append(other)
    for memo in (Path(current).parent / DIGESTS_DIR).glob("*"):
        try:
            if now - memo.stat().st_mtime >= idle_days * 86400:
                memo.unlink()
        except OSError:
            continue
    return removed


def skip_numba_blas_probe() -> None:
    """Load numba's numpy registry without its BLAS probe importing scipy (~0.3 s per process).

    ``numba.np.arraymath`` calls ``ensure_blas()`` at import, which imports ``scipy.linalg``;
    numba loads that module the first time any compiled function is loaded, even from the
    cache. The probe's only use is ``np.correlate``/``np.convolve`` choosing a BLAS inner
    product over a plain loop; ``np.dot`` and ``np.linalg`` check again (and import scipy)
    when a kernel that uses them is compiled. rush's kernels use none of them. scipy is hidden
    only while that one module is imported, and only if nothing has imported it yet.
    """
    if BLAS_PROBE_MODULE in sys.modules or "scipy.linalg" in sys.modules:
        return
    with _without_blas_probe():
        import numba.np.arraymath  # noqa: F401


BLAS_PROBE_MODULE = "numba.np.arraymath"


def skip_numba_blas_probe_when_imported() -> None:
    """:func:`skip_numba_blas_probe` at the moment ``numba.np.arraymath`` is imported, if ever.

    With rush's start-up trims a kernel loads from the cache without that module
    (:func:`_rebuild_environments_without_imports`): only a compile imports it, and then
    without its BLAS probe. With the trims off (``RUSH_LEAN_NUMBA=0``) the probe is skipped
    now, as before.
    """
    if not lean_numba_wanted():
        skip_numba_blas_probe()
        return
    if BLAS_PROBE_MODULE in sys.modules or "scipy.linalg" in sys.modules:
        return
    if not any(BLAS_PROBE_MODULE in getattr(f, "waiting", ()) for f in sys.meta_path):
        sys.meta_path.insert(0, _NumbaFirstImport((BLAS_PROBE_MODULE,)))


@contextmanager
def _without_blas_probe() -> Iterator[None]:
    """Hide scipy's linear algebra while ``numba.np.arraymath`` is imported (its BLAS probe)."""
    # `import numba` already imports the (light) scipy package itself; hide the heavy part.
    hidden = "scipy.linalg" if "scipy" in sys.modules else "scipy"
    if hidden in sys.modules:
        yield
        return
    sys.modules[hidden] = None  # type: ignore[assignment]  # makes the import fail at once
    try:
        yield
    finally:
        if hidden in sys.modules and sys.modules[hidden] is None:
            del sys.modules[hidden]


def cold_entry_points(entry_points: tuple[tuple[str, str], ...] = SIMULATION_ENTRY_POINTS) -> list[str]:
    """Entry points whose cache index is missing, from another numba version, or stale.

    Reads each function's index file the way numba does (``IndexDataCacheFile._load_index``:
    an empty dict means numba will compile). numba's private API can change: a function
    whose cache cannot be inspected counts as warm, so at worst the notice is not shown.
    """
    cold = []
    for module_name, function_name in entry_points:
        dispatcher = getattr(importlib.import_module(module_name), function_name)
        cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
        load_index = getattr(cache_file, "_load_index", None)
        if load_index is None:
            continue
        try:
            warm = bool(load_index())
        except Exception:  # a corrupt index: numba recompiles and overwrites it
            warm = False
        if not warm:
            cold.append(f"{module_name}.{function_name}")
    return cold


def announce_if_cold(stream: TextIO | None = None) -> bool:
    """Print one line to stderr when the simulation kernels will be compiled; True if so."""
    if not cold_entry_points():
        return False
    print(
        f"rush: compiling the scheduling core (first run only, about {FIRST_COMPILE_SECONDS} s; "
        "`rush warmup` does it ahead of time)...",
        file=stream or sys.stderr,
        flush=True,
    )
    return True
