"""Locales (`system/manage`)."""

from __future__ import annotations

routes: list = []
