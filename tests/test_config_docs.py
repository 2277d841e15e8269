"""docs/configuration.md's complete example holds every setting at its
default, and loads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from quire.config import DEFAULTS, load_settings

DOC = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
DEPRECATED = {("inbox", "trust_forwarded_for")}


def _complete_example() -> str:
    match = re.search(r"```toml\n(# <data>/quire.toml\n.*?)```", DOC, re.S)
    assert match, "the complete example is missing"
    return match.group(1)


def test_the_complete_example_is_every_setting_at_its_default(tmp_path: Path) -> None:
    example = tomllib.loads(_complete_example())
    expected = {section: {k: v for k, v in keys.items() if (section, k) not in DEPRECATED}
                for section, keys in DEFAULTS.items()}
    assert example == expected
    (tmp_path / "quire.toml").write_text(_complete_example(), encoding="utf-8")
    assert load_settings(tmp_path).values == DEFAULTS  # and it loads
