"""The rush daemon: the planner's cycle (:class:`rush.planner.plan.Planner`) in a loop.

Each cycle reads the RJMS, asks the core and applies (or only journals) its plan; this module
adds what only a long-running process needs: the interval between cycles, exponential
back-off after failures (capped at ``daemon.backoff_max``), and stopping on SIGTERM/SIGINT.
A failure outside a cycle's own guard (e.g. the journal's disk is full) is logged and counted,
and the loop goes on after the back-off. While it runs as a service it also answers ``rush
explain`` / ``rush status`` on ``daemon.query_socket`` (:mod:`rush.planner.query_server`).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from rush.core.warm_up import warm_live_pass
from rush.daemon.warm_child import warm_live_pass_in_child
from rush.errors import RushError
from rush.planner.collector import settle_collector
from rush.planner.config import RushConfig, load_config
from rush.planner.metrics import DaemonMetrics
from rush.planner.plan import CycleReport, Planner
from rush.planner.query_server import QueryServer, backend_rules
from rush.rjms.base import RJMSBackend

log = logging.getLogger("rush.daemon")


class Daemon(Planner):
    """The planner's cycle every ``daemon.cycle_interval`` seconds, with back-off."""

    def __init__(
        self,
        config: RushConfig,
        backend: RJMSBackend | None = None,
        dry_run: bool | None = None,
        metrics: DaemonMetrics | None = None,
        journal_sync: str = "FULL",
    ) -> None:
        super().__init__(config, backend, dry_run, metrics, journal_sync)
        self._stop = threading.Event()

    # -- the loop -------------------------------------------------------------------------
    def next_delay(self) -> float:
        """Seconds until the next cycle: the interval, or exponential back-off after failures."""
        interval = self.config.daemon.cycle_interval
        if self.failures == 0:
            return interval
        return min(self.config.daemon.backoff_max, interval * 2 ** min(self.failures - 1, 30))

    def stop(self, *_: Any) -> None:
        self._stop.set()

    def serve_queries(self) -> QueryServer | None:
        """Answer explain/status on ``daemon.query_socket``, by the RJMS's visibility rules.
        A socket that cannot be served is logged and journaled: scheduling goes on without it."""
        path = self.config.daemon.query_socket
        rules = backend_rules
        if getattr(self.backend, "cli", None) is None:
            # Read once, here: a Flux handle belongs to the loop's thread, not the server's.
            fixed = backend_rules(self.backend)
            rules = lambda _backend: fixed  # noqa: E731
        try:
            server = QueryServer(path, self.config.daemon.journal, lambda: rules(self.backend)).start()
        except RushError as exc:
            log.error("rush explain / rush status through the socket are off: %s", exc)
            self.journal.event(None, "query_socket", str(exc))
            return None
        log.info("answering rush explain / rush status on %s", path)
        return server

    def run(
        self,
        cycles: int | None = None,
        handle_signals: bool = False,
        serve_queries: bool | None = None,
        warm_in_child: bool | None = None,
    ) -> None:
        """Cycle until :meth:`stop` (SIGTERM/SIGINT with ``handle_signals``) or ``cycles`` cycles.

        ``serve_queries`` (default: ``handle_signals``, i.e. when running as the service)
        answers queries on the socket while the loop runs; ``warm_in_child`` (the same default)
        compiles the kernels in a child first (:mod:`rush.daemon.warm_child`): worth its 1-2 s
        of start-up for a service that cycles for days, not for a few cycles in one process."""
        if handle_signals:
            signal.signal(signal.SIGTERM, self.stop)
            signal.signal(signal.SIGINT, self.stop)
        queries = (
            self.serve_queries() if (handle_signals if serve_queries is None else serve_queries) else None
        )
        # Every kernel a cycle can call, loaded before the first cycle needs it (rush.core.warm_up):
        # compiled in a child, so that this process loads them from numba's cache and does not
        # keep the compiler's state (13-17 ms a steady cycle at 10 000 pending, round 30 r31cold).
        if handle_signals if warm_in_child is None else warm_in_child:
            try:
                warm_live_pass_in_child(self.core_config)
            except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
                log.warning("kernels not compiled in a child (%s); compiling them here", exc)
        warm_live_pass(self.core_config)
        # What start-up loaded lives as long as the service: out of the collector's reach.
        log.info(settle_collector())
        try:
            self._loop(cycles)
        finally:
            if queries is not None:
                queries.close()
            self.journal.close()

    def _loop(self, cycles: int | None) -> None:
        done = 0
        while not self._stop.is_set() and (cycles is None or done < cycles):
            try:
                report = self.run_cycle()
            except Exception as exc:  # e.g. the journal's disk is full: log, back off, retry
                log.exception("cycle failed outside its guard; retrying after back-off")
                self.failures += 1
                self.metrics.cycles.labels(outcome="error").inc()
                report = CycleReport(0, False, str(exc), outcome="error")
            done += 1
            if report.ok:
                log.info(
                    "cycle %d (%s): %s; applied %s; %.3f s",
                    report.cycle,
                    self.mode,
                    report.decisions,
                    report.applied,
                    report.seconds,
                )
            if cycles is None or done < cycles:
                self._stop.wait(self.next_delay())


def replay_hooks(config_path: Path):
    """(core config, backend, one-cycle callable) for ``rush replay --config``."""
    config = load_config(config_path)
    daemon = Daemon(config)
    # As run() does: every kernel loaded now, before the replay's first submit, not in its
    # first cycle (which the submitter waits for).
    warm_live_pass(daemon.core_config)
    return daemon.core_config, daemon.backend, daemon.run_cycle
