"""Personalization (`persona`): audience variants, schedules and variables
in content answers. `quire.persona.resolve` is the helper for server-side
code.

Persona has no routes and no services of its own: it is a transform that
the content and pages routes apply to their answers."""

from quire.modules import Module
from quire.persona.resolve import resolve

module = Module("persona")

__all__ = ["module", "resolve"]
