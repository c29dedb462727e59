"""``rush daemon``: run the scheduler against the real queue (dry-run by default)."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from rush.cli.app import app


@app.command("daemon")
def daemon_command(
    config: Path = typer.Option(..., "--config", help="rush.toml (see deploy/rush.toml)."),
    apply: bool | None = typer.Option(
        None,
        "--apply/--dry-run",
        help="Act on the RJMS, or only journal. Default: daemon.dry_run from the config (true).",
    ),
    once: bool = typer.Option(
        False,
        "--once",
        help="Validate the config and run one cycle, then exit (status 1 if it failed). "
        "Dry-run unless --apply is given: daemon.dry_run = false does not apply here.",
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v"),
) -> None:
    """Read the queue, decide with the core, apply or journal every decision with its reason."""
    from rush.daemon.service import Daemon
    from rush.planner.config import load_config

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    settings = load_config(config)
    if once:
        # --once is the validation command: it acts only when --apply is on the command
        # line, whatever daemon.dry_run says in the file being validated.
        dry_run: bool | None = apply is not True
    else:
        dry_run = None if apply is None else not apply
    daemon = Daemon(settings, dry_run=dry_run)
    log = logging.getLogger("rush.daemon")
    if once:
        report = daemon.run_cycle()
        typer.echo(
            f"cycle {report.cycle} ({daemon.mode}): {'ok' if report.ok else 'failed: ' + report.error}; "
            f"decisions {report.decisions}; applied {report.applied}; {report.seconds * 1e3:.0f} ms"
        )
        raise typer.Exit(0 if report.ok else 1)
    port = daemon.metrics.serve(settings.daemon.metrics_address)
    log.info(
        "rush daemon started: %s; metrics on %s (port %d); journal %s",
        "applying decisions" if not daemon.dry_run else "dry-run (journal only)",
        settings.daemon.metrics_address,
        port,
        settings.daemon.journal,
    )
    daemon.run(handle_signals=True)
    log.info("rush daemon stopped")
