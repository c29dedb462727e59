"""Errors that name the place of the problem and the fix.

Every user-facing failure in rush raises a subclass of :class:`RushError`. The CLI
prints ``str(error)`` and exits non-zero; the daemon journals it and keeps running.
"""

from __future__ import annotations


class RushError(Exception):
    """An error with a location (file:line, config key, endpoint, ...) and a suggested fix."""

    def __init__(self, message: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.message = message
        self.where = where
        self.fix = fix
        super().__init__(self.__str__())

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class TraceFormatError(RushError):
    """A trace file could not be read (malformed line, truncated gzip, bad header)."""


class TraceNotFoundError(RushError):
    """A trace path or catalogue name does not exist."""


class ConfigError(RushError):
    """A configuration key or value is wrong."""


class PolicyError(RushError):
    """An unknown policy name or invalid policy parameters."""


class ModelError(RushError):
    """A model file is missing, corrupt, or does not match the configuration."""


class RJMSError(RushError):
    """The resource and job management system could not be reached or answered badly."""


class BackendUnavailableError(RushError):
    """An optional backend dependency (e.g. flux, cassandra-driver) is not installed."""


class CollectorError(RushError):
    """A collector source could not be read (missing file, permission denied, bad format)."""


class OutputError(RushError):
    """An output path that rush must not write (e.g. an existing device, FIFO or socket)."""
