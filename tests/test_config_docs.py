"""docs/configuration.md against the typed settings (quire.config.SECTIONS,
the one source of truth): every section and setting is documented, no
documented one is missing from the code, each with its type, range and
default; the complete example holds every setting at its default, and loads."""

from __future__ import annotations

import re
import tomllib
import typing
from pathlib import Path
from typing import Any

import pytest

from quire.config import SECTIONS as ALL_SECTIONS
from quire.config import defaults, load_settings
from quire.sections import Spec

# Quire's own sections (a module package installed beside it, such as the
# example `quire_redirects`, adds its own, documented by the package)
SECTIONS = {name: cls for name, cls in ALL_SECTIONS.items() if cls.__module__.startswith("quire.")}

DOCS = Path(__file__).resolve().parent.parent / "docs"
DOC = (DOCS / "configuration.md").read_text(encoding="utf-8")


def _complete_example() -> str:
    match = re.search(r"```toml\n(# <data>/quire.toml\n.*?)```", DOC, re.S)
    assert match, "the complete example is missing"
    return match.group(1)


def _section_text(name: str) -> str:
    """What configuration.md says under ### `[name]`, up to the next heading."""
    match = re.search(rf"^### `\[{name}\]`\n(.*?)(?=^##)", DOC, re.S | re.M)
    assert match, f"configuration.md has no section [{name}]"
    return match.group(1)


def _table(text: str) -> dict[str, tuple[str, str]]:
    """The first `| Setting | Type | Default | ... |` table of a text:
    TOML key -> (type cell, default cell); a row may name several keys."""
    rows: dict[str, tuple[str, str]] = {}
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("| Setting | Type | Default |")), None)
    if start is None:
        return rows
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        first, kind, default = (cell.strip() for cell in line.strip("|").split("|")[:3])
        for key in re.findall(r"`([^`]+)`", first):
            assert key not in rows, f"{key} is documented twice"
            rows[key] = (kind, default)
    return rows


def _documented(name: str) -> dict[str, tuple[str, str]]:
    """The settings table of a section: in configuration.md, or for a
    section that links to its module's page (`[sso]`), in that page's
    Settings, with every key still named in configuration.md."""
    text = _section_text(name)
    rows = _table(text)
    if rows:
        return rows
    link = re.search(r"\]\((\w+\.md)#settings\)", text)
    assert link, f"[{name}] has no table and links to none"
    page = (DOCS / link.group(1)).read_text(encoding="utf-8")
    match = re.search(r"^### Settings\n(.*?)(?=^##)", page, re.S | re.M)
    assert match, f"{link.group(1)} has no Settings section"
    rows = _table(match.group(1))
    assert set(re.findall(r"`([^`]+)`", text)) >= set(rows), f"configuration.md's [{name}] names not all settings"
    return rows


def _type_word(hint: Any) -> str:
    """How the docs' Type column starts for a setting of this type."""
    origin = typing.get_origin(hint)
    if origin is dict:
        return "table"
    if origin is tuple:
        return "list of strings"
    if origin is not None:  # bool | str
        return "boolean or string"
    return {bool: "boolean", int: "integer", str: "string"}[hint]


def _number(text: str) -> int:
    base, _, power = text.replace(",", "").partition("^")
    return int(base) ** int(power) if power else int(base)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def test_every_section_is_documented_and_no_other() -> None:
    documented = re.findall(r"^### `\[(\w+)\]`$", DOC, re.M)
    assert sorted(documented) == sorted(SECTIONS)


@pytest.mark.parametrize("name", list(SECTIONS))
def test_every_setting_is_documented_with_its_type_range_and_default(name: str) -> None:
    rows = _documented(name)
    specs: dict[str, Spec] = {spec.key: spec for spec in SECTIONS[name].specs()}
    assert sorted(rows) == sorted(specs), f"[{name}]: documented settings differ from the code's"
    for key, (kind, default) in rows.items():
        spec = specs[key]
        assert kind.startswith(_type_word(spec.hint)), f"{spec.name}: type {kind!r}"
        stated = re.fullmatch(r"integer, ([0-9,^]+)–([0-9,^]+)( \(.*\))?", kind)
        if spec.between is not None:
            assert stated, f"{spec.name}: the Type column does not give its range {spec.between}"
            assert (_number(stated.group(1)), _number(stated.group(2))) == spec.between, spec.name
        else:
            assert not stated, f"{spec.name} has no range"
        value = re.match(r"`([^`]+)`", default)  # a default given as TOML (else in words)
        if value:
            assert tomllib.loads(f"v = {value.group(1)}")["v"] == _plain(spec.default), f"{spec.name}: default"


def test_the_complete_example_is_every_setting_at_its_default(tmp_path: Path) -> None:
    example = tomllib.loads(_complete_example())
    expected = {name: {spec.key: _plain(spec.default) for spec in cls.specs() if not spec.deprecated}
                for name, cls in SECTIONS.items()}
    assert example == expected
    (tmp_path / "quire.toml").write_text(_complete_example(), encoding="utf-8")
    own = {name: values for name, values in defaults().items() if name in SECTIONS}
    loaded = load_settings(tmp_path, env={}).values  # and it loads
    assert {name: values for name, values in loaded.items() if name in SECTIONS} == own
