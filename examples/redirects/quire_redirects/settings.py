"""`[redirects]` in quire.toml (and `QUIRE_REDIRECTS_<KEY>`), registered
when the package is imported, before Quire reads its settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from quire.config import register_section
from quire.sections import Section, setting


@register_section
@dataclass(frozen=True)
class RedirectSettings(Section):
    NAME: ClassVar[str] = "redirects"
    max_rules: int = setting(5000, between=(1, 1_000_000))
