"""What an import from Cockpit did not carry over as it was.

Each note names its kind (`model`, `field`, `type`, `item`, `asset`,
`role`, `key`, `collection`, ...), where it applies and what happened; a
value that was left out is kept in the note, so nothing is lost without a
trace. The report is written as JSON (`--report`), and summed up on the
terminal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

NOTES_KEPT = 100_000  # a report past this many notes keeps counting, not storing


@dataclass
class Report:
    notes: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    dropped: int = 0

    def note(self, kind: str, where: str, what: str, value: Any = None) -> None:
        self.counts[kind] += 1
        if len(self.notes) >= NOTES_KEPT:
            self.dropped += 1
            return
        entry: dict[str, Any] = {"kind": kind, "where": where, "what": what}
        if value is not None:
            entry["value"] = value
        self.notes.append(entry)

    def summary(self) -> str:
        if not self.counts:
            return "nothing to report: everything came over as it was"
        parts = ", ".join(f"{count} about {kind}s" for kind, count in sorted(self.counts.items()))
        return f"{sum(self.counts.values())} notes ({parts})"

    def write(self, path: Path, head: dict[str, Any]) -> None:
        body = {**head, "notes": self.notes}
        if self.dropped:
            body["notes_left_out"] = self.dropped
        path.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2, default=str))
