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

Unknown keys are rejected with a message that names them (``extra="forbid"``). Types are
strict and numbers finite (``retention = true`` is not 1 s, ``enabled = "false"`` is not
true); ``retention`` must be > 0 (0 would prune every reading as it is written); an unknown
collector name is refused here, not retried every cycle. The file is read by
:func:`rush.config_file.read_toml` (UTF-8 only, at most 1 MiB, regular files only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from rush.collect.base import collector_names
from rush.config_file import (
    duration_or_number,
    explain,
    file_path,
    non_finite,
    parse_duration,
    read_toml,
    split_host_port,
)
from rush.errors import ConfigError

__all__ = [
    "CollectConfig",
    "SourceConfig",
    "collect_config_from_dict",
    "load_collect_config",
    "parse_duration",
]

DAY = 86400.0
# Strict types (``true`` is not 1 second, ``"false"`` is not true) and no NaN/inf anywhere.
Duration = Annotated[float, Field(strict=True), BeforeValidator(duration_or_number)]


def _address(value: str) -> str:
    if value:
        split_host_port(value)
    return value


class SourceConfig(BaseModel):
    """One collector run each cycle."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    collector: StrictStr = Field(description="a registered collector name (e.g. prometheus, rapl)")
    name: StrictStr = Field(
        "", max_length=200, description="a label of at most 200 characters (default: the collector)"
    )
    options: dict[StrictStr, Any] = Field(
        default_factory=dict, description="a table of the collector's options (finite numbers only)"
    )
    enabled: StrictBool = Field(True, description="true or false")

    @field_validator("collector")
    @classmethod
    def _known(cls, value: str) -> str:
        # A misspelt collector never starts working: refuse it at start-up, not every cycle.
        if value not in collector_names():
            raise ValueError(f"unknown collector {value!r}; use one of: {', '.join(collector_names())}")
        return value

    @field_validator("options")
    @classmethod
    def _finite(cls, value: dict[str, Any]) -> dict[str, Any]:
        problem = non_finite(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _default_name(self) -> SourceConfig:
        if not self.name.strip():
            self.name = self.collector
        return self


class CollectConfig(BaseModel):
    """Settings of the collector service (``rush collect``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    interval: Duration = Field(
        10.0, ge=0.1, le=DAY, description='seconds from 0.1 to 86400, or a duration such as "30s"'
    )
    store: Annotated[Path, BeforeValidator(file_path)] = Field(
        Path("rush-features.sqlite"), description="the path of the feature store file (SQLite)"
    )
    # Must be > 0: a retention of 0 (or less) would prune every reading as soon as it is written.
    retention: Duration = Field(
        14 * DAY, gt=0, le=36500 * DAY, description='seconds > 0 or a duration such as "14d"'
    )
    metrics_address: Annotated[StrictStr, AfterValidator(_address)] = Field(
        "127.0.0.1:9466", description='HOST:PORT or [IPv6]:PORT (port 0: any free one), or "" for none'
    )
    prune_every: StrictInt = Field(
        60, ge=1, le=1_000_000, description="an integer from 1 to 1000000: prune every N cycles"
    )
    sources: list[SourceConfig] = Field(
        default_factory=list, max_length=1000, description="at most 1000 [[collect.sources]] tables"
    )

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
        return split_host_port(self.metrics_address)


def collect_config_from_dict(section: dict[str, Any], where: str = "rush.toml") -> CollectConfig:
    """Validate a ``[collect]`` table; errors name the key (``collect.sources[0].optoins``)."""
    try:
        return CollectConfig.model_validate(section)
    except ValidationError as exc:
        raise explain(
            exc,
            where,
            CollectConfig,
            prefix="collect",
            example="the [collect] example in rush/collect/config.py",
        ) from None


def load_collect_config(path: Path) -> CollectConfig:
    """Read the ``[collect]`` section of a rush.toml (other sections belong to other parts)."""
    data = read_toml(path)
    section = data.get("collect")
    if section is None:
        raise ConfigError("no [collect] section", where=str(path), fix="add a [collect] table with sources")
    if not isinstance(section, dict):
        raise ConfigError("'collect' must be a table", where=str(path))
    config = collect_config_from_dict(section, where=str(path))
    if not config.store.is_absolute():
        # Relative store paths are relative to the config file, not to wherever rush was started.
        config.store = path.parent / config.store
        if config.store.is_dir():
            raise ConfigError(
                "the feature store path is a directory",
                where=f"{path}: collect.store",
                fix="give the path of a file, e.g. features.sqlite inside that directory",
            )
    return config
