"""What reading a Cockpit site's documents can meet, from its SQLite files
(folder.py) or a MongoDB export (mongoexport.py)."""

from __future__ import annotations

from dataclasses import dataclass


class NotCockpit(Exception):
    """The folder is not a Cockpit 2 storage folder we can read; the
    message says what is missing or broken."""


@dataclass
class BadDocument:
    """A row whose document is not a JSON object."""

    collection: str
    row: int
    problem: str
