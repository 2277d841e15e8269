"""Personalization (`persona`): audience variants, schedules and variables
in content answers. `quire.persona.resolve` is the helper for server-side
code."""

from quire.persona.resolve import resolve

__all__ = ["resolve"]
