"""Which language a text is written in, with py3langid: its model ships in
the package, so nothing is downloaded at run time. The model loads once per
process, on first use (under a second)."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_identifier: Any = None


def _get() -> Any:
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE)
        return _identifier


def supported() -> set[str]:
    """ISO 639-1 codes the detector knows."""
    return set(_get().nb_classes)


def detect(text: str) -> str:
    """The most likely language of `text` (ISO 639-1)."""
    return str(_get().classify(text)[0])
