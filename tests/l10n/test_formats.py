"""The pure parts: locale codes, nesting, PO and i18next files."""

from __future__ import annotations

import pytest

from quire.l10n import formats
from quire.l10n.service import canonical_locale

HAND_WRITTEN_PO = """\
# A file as a translator sends it back.
msgid ""
msgstr ""
"Language: de_DE\\n"
"Content-Type: text/plain; charset=UTF-8\\n"

#: src/app.js:10
msgid "hello"
msgstr "Hallo"

#, fuzzy
msgid "menu.file"
msgstr "Dattei?"

msgid "menu.edit"
msgstr ""

msgid ""
"multi.line"
msgstr ""
"Erste Zeile\\n"
"zweite \\"Zeile\\""

#~ msgid "old"
#~ msgstr "alt"
"""


@pytest.mark.parametrize(("code", "canonical"), [
    ("en", "en"), ("EN", "en"), ("pt_br", "pt-BR"), ("pt-BR", "pt-BR"), ("zh-hant-tw", "zh-Hant-TW"),
    ("ZH_HANT_TW", "zh-Hant-TW"), ("sr-latn", "sr-Latn"), ("es-419", "es-419"), ("zh-TW", "zh-TW"),
    ("de_ch", "de-CH"),
])
def test_locale_codes_are_canonicalised(code: str, canonical: str) -> None:
    assert canonical_locale(code) == canonical


@pytest.mark.parametrize("code", [
    "xx", "en-GB-oxendict", "de-CH-1996", "ca-ES-valencia", "en_US_POSIX", "de@euro", "en-", "-en",
    "en--US", "export", "import", "root", "x-private", "", "en US", None, 3,
])
def test_unknown_or_lossy_locale_codes_are_refused(code: object) -> None:
    assert canonical_locale(code) is None


def test_nest_moves_dotted_keys_into_objects() -> None:
    assert formats.nest({"menu.file.open": 1, "menu.file.close": 2, "title": 3}) == {
        "menu": {"file": {"close": 2, "open": 1}}, "title": 3,
    }


def test_nest_keeps_keys_with_empty_segments_flat() -> None:
    flat = {"Loading...": 1, ".x": 2, "x.": 3, "a..b": 4}
    assert formats.nest(flat) == flat


def test_nest_keeps_colliding_keys_flat_shortest_first() -> None:
    # "a.b" is placed before "a.b.c" (fewer segments) and takes the spot
    assert formats.nest({"a.b.c": 1, "a.b": 2, "a.c": 3}) == {"a": {"b": 2, "c": 3}, "a.b.c": 1}
    assert formats.nest({"a.b": 1, "a": 2}) == {"a": 2, "a.b": 1}


def test_nest_treats_dict_values_as_leaves_not_branches() -> None:
    # full form: leaves are {locale: value} maps; a later key must not go inside one
    out = formats.nest({"a": {"en": "x"}, "a.en": {"en": "y"}})
    assert out == {"a": {"en": "x"}, "a.en": {"en": "y"}}


def test_nest_keeps_very_deep_keys_flat() -> None:
    deep = ".".join(["s"] * (formats.MAX_NEST + 1))
    ok = ".".join(["t"] * formats.MAX_NEST)
    out = formats.nest({deep: 1, ok: 2})
    assert deep in out
    node = out["t"]
    for _ in range(formats.MAX_NEST - 2):
        node = node["t"]
    assert node == {"t": 2}


def test_flatten_joins_nested_objects_with_dots() -> None:
    assert formats.flatten({"a": {"b": "x", "c": {"d": "y"}}, "e": "z", "f.g": "w"}) == {
        "a.b": "x", "a.c.d": "y", "e": "z", "f.g": "w",
    }


@pytest.mark.parametrize(("tree", "message"), [
    ([], "An i18next file must hold a JSON object"),
    ({"a": {"b": 1}}, "Value of 'a.b' must be a string"),
    ({"a": None}, "Value of 'a' must be a string"),
    ({"a": ["x"]}, "Value of 'a' must be a string"),
    ({"a.b": "x", "a": {"b": "y"}}, "Key 'a.b' appears twice (once nested, once with dots)"),
])
def test_flatten_refuses_what_is_not_a_string_tree(tree: object, message: str) -> None:
    with pytest.raises(formats.FormatError) as caught:
        formats.flatten(tree)
    assert str(caught.value) == message


def test_flatten_survives_very_deep_files() -> None:
    tree: dict[str, object] = {"leaf": "x"}
    for _ in range(5000):
        tree = {"n": tree}
    assert list(formats.flatten(tree).values()) == ["x"]


def test_i18next_export_leaves_missing_values_out_and_nests() -> None:
    raw = formats.write_i18next({"a.b": "x", "a.c": None, "d": "", "e": "y"})
    assert formats.read_json_file(raw) == {"a": {"b": "x"}, "e": "y"}


def test_po_round_trip_keeps_keys_values_and_special_characters() -> None:
    values: dict[str, str | None] = {
        "hello": "Hallo", "missing": None, 'quote"s': 'say "hi"', "multi": "line 1\nline 2",
        "tab\tkey": "tab\tvalue", "unicode": "Grüße 😀",
    }
    raw = formats.write_po("site", "pt-BR", values, 1_700_000_000)
    text = raw.decode()
    assert '"Language: pt_BR\\n"' in text
    assert "fuzzy" not in text
    parsed = formats.read_po(raw)
    assert parsed.language == "pt_BR"
    assert parsed.entries == values


def test_po_export_is_stable_for_the_same_project() -> None:
    one = formats.write_po("site", "de", {"a": "b"}, 1_700_000_000)
    assert one == formats.write_po("site", "de", {"a": "b"}, 1_700_000_000)
    assert b"2023-11-14 22:13+0000" in one


def test_a_hand_written_po_skips_fuzzy_and_obsolete_entries() -> None:
    parsed = formats.read_po(HAND_WRITTEN_PO.encode())
    assert parsed.language == "de_DE"
    assert parsed.entries == {
        "hello": "Hallo",
        "menu.edit": None,  # untranslated
        "multi.line": 'Erste Zeile\nzweite "Zeile"',
    }


@pytest.mark.parametrize(("raw", "message"), [
    (b'msgid "a"\nmsgid_plural "as"\nmsgstr[0] "x"\nmsgstr[1] "y"\n',
     "PO entry 'a': plural entries are not supported"),
    (b'msgctxt "menu"\nmsgid "a"\nmsgstr "b"\n', "PO entry 'a': entries with msgctxt are not supported"),
    (b"this is not a po file", "File is not a valid PO file"),
    (b'{"a": "b"}', "File is not a valid PO file"),
    (b"\x00\x01\x02", "File is not a valid PO file"),
    (b'msgid "a"\nmsgstr "\xff\xfe"\n', "File is not a valid PO file"),
    (b'msgid "a"\nmsgstr "b"\n\nmsgid "c\nmsgstr "d"\n',
     "File is not a valid PO file: line 4: not a keyword with a quoted string: 'msgid \"c'"),
    (b"msgid a\nmsgstr b\n", "File is not a valid PO file: line 1: not a keyword with a quoted string"),
    (b'msgid "a"\nmsgstr "b\\"\n', "File is not a valid PO file: line 2"),
    (b'"x"\nmsgid "a"\nmsgstr "b"\n', "File is not a valid PO file: line 1"),
    (b'msgid "a"\nmsgstr "b"\n\nmsgid "a"\nmsgstr "c"\n', "PO entry 'a' appears twice (lines 1 and 4)"),
    (b'msgid ""\n"a"\nmsgstr "b"\n\n#, fuzzy\nmsgid "a"\nmsgstr "c"\n', "PO entry 'a' appears twice (lines 1 and 6)"),
])
def test_bad_po_files_are_refused_clearly(raw: bytes, message: str) -> None:
    with pytest.raises(formats.FormatError) as caught:
        formats.read_po(raw)
    assert str(caught.value).startswith(message)
