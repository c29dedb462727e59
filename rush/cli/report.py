"""`rush` commands: report (filled in by its issue)."""

from rush.cli.main import app  # noqa: F401
