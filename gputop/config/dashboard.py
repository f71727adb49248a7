"""The dashboard's config: what `gputop` and `gputop replay` hand the dashboard once the command
line and the settings file (`gputop.config.settings`) are read and checked."""

from __future__ import annotations

from dataclasses import dataclass, field

from gputop.config.options import SourceConfig
from gputop.config.settings import Settings
from gputop.core.bounds import HISTORY_DEFAULT_S


@dataclass(frozen=True)
class DashboardConfig:
    """Every choice the dashboard starts with; the command line's values over the file's."""

    source: SourceConfig = field(default_factory=SourceConfig)
    theme: str | None = None  # None: the default theme
    theme_from_settings: bool = False  # the theme came from the settings file, not --theme
    readonly: bool = False
    record_fields: str | None = None  # comma separated nvidia-smi fields; None: the default set
    record_dir: str = "."
    settings: Settings = field(default_factory=Settings)  # the file's columns and sort order too
    history_s: float = HISTORY_DEFAULT_S  # how far back the sampler's history reaches (--history)
