"""A real Flux instance for the tests: ``flux start --test-size=N`` in a temp dir, stopped by PID.

The flux-core the tests use is found by :func:`flux_prefix`: ``RUSH_FLUX_PREFIX``, else the
``flux`` on PATH, else ``/opt/flux-core`` (where ``.ci/vendor-flux.sh`` builds the vendored
flux-core 0.88). Larger fake clusters: each test broker is one "node" named ``node<rank>``;
``cores`` sets the cores per node through a ``resource.config`` with ``noverify`` (Flux does
not bind tasks to cores by default, so a 2-core machine can host a 64-core fake node).

The broker runs rush's Python modules with Debian's ``python3``; ``FLUX_PYTHONPATH_PREPEND``
puts this checkout and the project venv's site-packages first so they import rush.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from rush.rjms.flux import scheduler_swap

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PREFIX = Path("/opt/flux-core")


def flux_prefix() -> Path | None:
    """The flux-core install prefix, or None when no Flux is installed."""
    env = os.environ.get("RUSH_FLUX_PREFIX")
    if env:
        return Path(env) if (Path(env) / "bin" / "flux").exists() else None
    on_path = shutil.which("flux")
    if on_path:
        return Path(on_path).resolve().parent.parent
    return DEFAULT_PREFIX if (DEFAULT_PREFIX / "bin" / "flux").exists() else None


def available() -> str | None:
    """None when a real Flux can run here, else why not (the skip reason)."""
    prefix = flux_prefix()
    if prefix is None:
        return (
            "no flux-core installed (run .ci/vendor-flux.sh, which builds ../shared/vendor's "
            "flux-core 0.88 into /opt/flux-core, or set RUSH_FLUX_PREFIX)"
        )
    try:
        import flux  # noqa: F401
    except ImportError:
        return f"Flux's Python bindings are not importable here (add {prefix}/lib/python3.*/site-packages)"
    return None


def python_path() -> str:
    """What the broker's Python modules need first on sys.path to import rush and its deps."""
    return os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])


class FluxInstance:
    """``flux start --test-size=size``; every broker is a fake node with ``cores`` cores."""

    def __init__(
        self,
        workdir: Path,
        size: int = 1,
        cores: int | None = None,
        config: str = "",
        env: dict[str, str] | None = None,
        attrs: dict[str, str] | None = None,
        layout: str = "",
    ) -> None:
        prefix = flux_prefix()
        if prefix is None:
            raise RuntimeError(available() or "no flux")
        self.prefix = prefix
        self.flux = str(prefix / "bin" / "flux")
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.size = int(size)
        self.cores = cores
        self.extra_config = config
        # A node layout of its own: ``[[resource.config]]`` tables (hosts node0..node<size-1>,
        # cores, gpus, properties), written with ``noverify`` in place of the ``cores`` one.
        self.layout = layout
        self.extra_env = dict(env or {})
        # Broker attributes (-S), e.g. {"statedir": DIR} so a restarted instance keeps its jobs.
        self.attrs = dict(attrs or {})
        self.uri = ""
        self.proc: subprocess.Popen | None = None
        self._log = None

    # -- lifecycle ------------------------------------------------------------------------
    def _write_config(self) -> Path:
        confdir = self.workdir / "conf"
        confdir.mkdir(exist_ok=True)
        text = ""
        if self.layout:
            text += "[resource]\nnoverify = true\n\n" + self.layout + "\n"
        elif self.cores:
            last = self.size - 1
            hosts = f"node[0-{last}]" if last else "node0"
            cores = f"0-{self.cores - 1}" if self.cores > 1 else "0"  # Flux refuses the idset "0-0"
            text += (
                "[resource]\nnoverify = true\n\n"
                f'[[resource.config]]\nhosts = "{hosts}"\ncores = "{cores}"\n\n'
            )
        text += self.extra_config
        (confdir / "instance.toml").write_text(text)
        return confdir

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.extra_env)
        env["FLUX_PYTHONPATH_PREPEND"] = python_path()
        env.pop("FLUX_URI", None)
        if self.uri:
            env["FLUX_URI"] = self.uri
        return env

    def start(self, timeout: float = 60.0) -> FluxInstance:
        confdir = self._write_config()
        uri_file = self.workdir / "uri"
        uri_file.unlink(missing_ok=True)
        argv = [self.flux, "start", f"--test-size={self.size}", f"--config-path={confdir}"]
        argv += [f"-S{k}={v}" for k, v in self.attrs.items()]
        if self.cores or self.layout:
            last = self.size - 1
            argv.append(f"--test-hosts=node[0-{last}]" if last else "--test-hosts=node0")
        # The initial program publishes the URI and waits; the instance lives as long as it does.
        argv += [
            "sh",
            "-c",
            f'echo "$FLUX_URI" > {uri_file}.tmp && mv {uri_file}.tmp {uri_file} && exec sleep 1000000',
        ]
        self._log = open(self.workdir / "flux.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv,
            cwd=self.workdir,
            env=self.env(),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() kills only what we started
        )
        self._wait(uri_file.exists, timeout, "the instance's URI")
        self.uri = uri_file.read_text().strip()
        self._wait(lambda: self.run("uptime", check=False).returncode == 0, timeout, "flux uptime")
        if self.size > 1 or self.cores:
            want = self.size * (self.cores or 0)
            self._wait(lambda: not want or self.total_cores() >= want, timeout, f"{want} cores up")
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.run("shutdown", "--quiet", check=False, timeout=30)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)  # our own session (start_new_session)
                self.proc.wait(timeout=10)
        if self._log:
            self._log.close()
        self.proc = None

    def __enter__(self) -> FluxInstance:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(
                    f"flux start exited ({self.proc.returncode}) before {what}:\n{self.log_tail()}"
                )
            try:
                if ready():
                    return
            except (OSError, subprocess.SubprocessError, ValueError):
                pass
            time.sleep(0.1)
        raise TimeoutError(f"waiting for {what}:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        path = self.workdir / "flux.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- commands -------------------------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 60.0, input: str | None = None):
        """``flux ARGV...`` against this instance."""
        return subprocess.run(
            [self.flux, *argv],
            env=self.env(),
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
            input=input,
        )

    def handle(self):
        import flux

        return flux.Flux(self.uri)

    def total_cores(self) -> int:
        out = self.run("resource", "list", "-s", "up", "-no", "{ncores}", check=False)
        return int(out.stdout.strip() or 0) if out.returncode == 0 else 0

    def submit(self, *args: str) -> int:
        """``flux submit ARGS`` -> job id (an int)."""
        out = self.run("submit", *args)
        return int(self.run("job", "id", "--to=dec", out.stdout.strip()).stdout.strip())

    def jobs(self, *fields: str, states: str = "all") -> list[dict]:
        """``flux jobs`` as dicts (``--json``)."""
        out = self.run("jobs", "--json", "-a" if states == "all" else f"--filter={states}")
        data = json.loads(out.stdout or "{}")
        return data.get("jobs", [])

    def wait_job(self, job_id: int, timeout: float = 60.0) -> None:
        self.run("job", "wait-event", "-t", str(timeout), str(job_id), "clean", timeout=timeout + 5)

    def cancel_all(self) -> None:
        self.run("cancel", "--all", "-q", check=False)

    def module(self, *args: str, check: bool = True, timeout: float = 300.0):
        # ``flux module load`` returns once the module reports itself running; Fluxion's modules
        # do so before their synchronous start-up (graph, handshakes), see tests/flux/fluxion.py.
        return self.run("module", *args, check=check, timeout=timeout)

    def _flux_runner(self, timeout: float):
        return lambda *argv: self.run(*argv, timeout=timeout).stdout

    def modules(self, timeout: float = 60.0) -> dict[str, list[str]]:
        """``flux module list``: each loaded module's name -> the services it provides."""
        return scheduler_swap.loaded_modules(self._flux_runner(timeout))

    def remove_schedulers(self, timeout: float = 300.0) -> None:
        """Remove every scheduler module and wait for the broker's teardown of their processes
        (rush/rjms/flux/scheduler_swap.py: flux-core 0.88 closes one socket of a removed
        module's process twice, and a module loaded meanwhile can lose that descriptor); a
        scheduler left or a teardown outlasting ``timeout`` fails with the broker's state."""
        try:
            scheduler_swap.remove_schedulers(self._flux_runner(timeout), timeout)
        except (RuntimeError, TimeoutError) as error:
            raise type(error)(f"{error}\n{self.diagnostics()}") from error

    def module_processes(self, timeout: float = 60.0) -> dict[int, str]:
        """The modules the broker runs as processes: PID -> module name (``flux sproc ps``)."""
        return scheduler_swap.module_processes(self._flux_runner(timeout))

    def use_scheduler(self, path_or_name: str, *args: str) -> None:
        """Replace the loaded scheduler module (``sched-simple`` by default) by another one."""
        self.remove_schedulers()
        self.module("load", path_or_name, *args)

    # -- when something does not answer ---------------------------------------------------
    def diagnostics(self, timeout: float = 20.0) -> str:
        """What the broker shows, for a failure message: ``flux module list``, the tail of
        ``flux dmesg`` and of the instance's log, and the broker's threads when gdb is here
        (each command bounded by ``timeout``: a broker that does not answer is said so)."""
        parts = []
        for argv, tail in ((("module", "list"), 0), (("dmesg",), 60)):
            try:
                out = self.run(*argv, check=False, timeout=timeout)
                text = out.stdout + out.stderr
                text = "\n".join(text.splitlines()[-tail:]) if tail else text
            except subprocess.TimeoutExpired:
                text = f"(no answer in {timeout:g} s: the broker does not answer requests)"
            parts.append(f"--- flux {' '.join(argv)}\n{text.rstrip()}")
        parts.append(f"--- {self.workdir / 'flux.log'} (tail)\n{self.log_tail()}")
        parts.append(f"--- broker threads\n{self.broker_stacks(timeout * 3)}")
        return "\n".join(parts)

    def broker_pids(self) -> list[int]:
        """The PIDs of this instance's brokers (children of ``flux start``, by /proc)."""
        if self.proc is None:
            return []
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                pid, rest = stat.read_text().split(" ", 1)
                comm, fields = rest.rsplit(")", 1)
            except (OSError, ValueError):
                continue
            if comm.startswith("(flux-broker") and int(fields.split()[1]) == self.proc.pid:
                pids.append(int(pid))
        return sorted(pids)

    def broker_stacks(self, timeout: float = 60.0) -> str:
        """Every thread's stack of rank 0's broker (``gdb -batch``), or why there are none."""
        gdb = shutil.which("gdb")
        pids = self.broker_pids()
        if not gdb or not pids:
            return "(no gdb on PATH)" if not gdb else "(no broker process found)"
        argv = [gdb, "-p", str(pids[0]), "-batch", "-ex", "thread apply all bt"]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"(gdb did not finish in {timeout:g} s)"
        threads: list[list[str]] = []
        for line in out.stdout.splitlines():
            if line.startswith("Thread "):
                threads.append([line])
            elif line.startswith("#") and threads:
                threads[-1].append(line)
        # A thread waiting in its reactor is idle; the others are where a hang is.
        idle = [t[0].split('"')[1] for t in threads if len(t) > 1 and "epoll_wait" in t[1] and '"' in t[0]]
        busy = ["\n".join(t) for t in threads if not (len(t) > 1 and "epoll_wait" in t[1] and '"' in t[0])]
        if not threads:
            return out.stderr.strip() or "(gdb printed no threads)"
        return "\n".join([f"idle in their reactors: {', '.join(idle) or 'none'}", *busy])
