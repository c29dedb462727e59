"""The ``[collect]`` section of rush.toml (embedded by the daemon's overall config model).

    [collect]
    interval = 10                 # seconds between collection cycles
    store = "/var/lib/rush/features.sqlite"
    retention = "14d"             # samples older than this are pruned (s, m, h, d suffixes)
    metrics_address = "127.0.0.1:9466"   # self-metrics endpoint; "" disables it

    [[collect.sources]]
    collector = "prometheus"      # a registered collector name (rush.collect.base.collector_names())
    name = "prom"                 # label in logs and self-metrics; defaults to the collector name
    options = { url = "http://prometheus:9090", rate_window = "1m" }

Unknown keys are rejected with a message that names them (``extra="forbid"``).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rush.errors import ConfigError

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([smhd]?)\s*$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: float | int | str) -> float:
    """``30`` / ``"30s"`` / ``"5m"`` / ``"12h"`` / ``"14d"`` -> seconds."""
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"not a duration: {value!r} (use seconds or a number with s, m, h or d)")
    return float(match.group(1)) * _SECONDS[match.group(2)]


class SourceConfig(BaseModel):
    """One collector run each cycle."""

    model_config = ConfigDict(extra="forbid")

    collector: str
    name: str = ""
    options: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True

    @model_validator(mode="after")
    def _default_name(self) -> SourceConfig:
        if not self.name:
            self.name = self.collector
        return self


class CollectConfig(BaseModel):
    """Settings of the collector service (``rush collect``)."""

    model_config = ConfigDict(extra="forbid")

    interval: float = Field(10.0, gt=0)
    store: Path = Path("rush-features.sqlite")
    retention: float = 14 * 86400.0
    metrics_address: str = "127.0.0.1:9466"
    prune_every: int = Field(60, ge=1, description="prune the store every N cycles")
    sources: list[SourceConfig] = Field(default_factory=list)

    @field_validator("interval", "retention", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    @field_validator("metrics_address")
    @classmethod
    def _address(cls, value: str) -> str:
        if value:
            host, sep, port = value.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
                raise ValueError(f"not HOST:PORT: {value!r}")
        return value

    @model_validator(mode="after")
    def _unique_names(self) -> CollectConfig:
        names = [s.name for s in self.sources]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate source name(s) {', '.join(dupes)}; give each a distinct 'name'")
        return self

    @property
    def metrics_host_port(self) -> tuple[str, int] | None:
        if not self.metrics_address:
            return None
        host, _, port = self.metrics_address.rpartition(":")
        return host.strip("[]"), int(port)


def _key(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = ["collect"]
    for item in loc:
        if isinstance(item, int):
            parts[-1] += f"[{item}]"
        else:
            parts.append(item)
    return ".".join(parts)


def collect_config_from_dict(section: dict[str, Any], where: str = "rush.toml") -> CollectConfig:
    """Validate a ``[collect]`` table; errors name the key (``collect.sources[0].optoins``)."""
    try:
        return CollectConfig.model_validate(section)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = _key(tuple(first["loc"]))
        if first["type"] == "extra_forbidden":
            message, fix = (
                f"unknown key {key!r}",
                "remove it or fix its spelling (see rush/collect/config.py)",
            )
        else:
            message, fix = (
                f"bad value for {key!r}: {first['msg']}",
                "see the [collect] example in rush/collect/config.py",
            )
        more = len(exc.errors()) - 1
        if more:
            message += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise ConfigError(message, where=f"{where}: {key}", fix=fix) from None


def load_collect_config(path: Path) -> CollectConfig:
    """Read the ``[collect]`` section of a rush.toml (other sections belong to other parts)."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror}", where=str(path), fix="give an existing rush.toml"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", where=str(path)) from exc
    section = data.get("collect")
    if section is None:
        raise ConfigError("no [collect] section", where=str(path), fix="add a [collect] table with sources")
    if not isinstance(section, dict):
        raise ConfigError("'collect' must be a table", where=str(path))
    config = collect_config_from_dict(section, where=str(path))
    if not config.store.is_absolute():
        # Relative store paths are relative to the config file, not to wherever rush was started.
        config.store = path.parent / config.store
    return config
