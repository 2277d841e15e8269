"""Cockpit's model files: the PHP literal subset `var_export` writes is
read; any other PHP is refused with its line, never run."""

from __future__ import annotations

import pytest

from quire.cockpit.phparray import PhpError, read_php_return
from tests.cockpit.conftest import SITE


def test_every_model_file_of_the_real_site_reads() -> None:
    for path in sorted((SITE / "storage" / "content").glob("*.model.php")):
        model = read_php_return(path.read_text())
        assert model["name"] == path.name.split(".")[0]
        assert isinstance(model["fields"], list) and model["fields"]


@pytest.mark.parametrize(("text", "value"), [
    ("<?php return [];", []),
    ("<?php\n return [\n  0 => 'a',\n  1 => 'b',\n];", ["a", "b"]),
    ("<?php return array ( 'k' => array ( 0 => 1, ), );", {"k": [1]}),
    ("<?php return ['a' => NULL, 'b' => true, 'c' => FALSE, 'd' => -1.5, 'e' => 0x1f, 'f' => 2e3];",
     {"a": None, "b": True, "c": False, "d": -1.5, "e": 31, "f": 2000.0}),
    ("<?php return ['it\\'s' => 'back\\\\slash', 'multi' => 'line one\nline two'];",
     {"it's": "back\\slash", "multi": "line one\nline two"}),
    ("<?php return ['nul' => '' . \"\\0\" . 'x', 'esc' => \"tab\\there \\x41\\u{263A}\"];",
     {"nul": "\x00x", "esc": "tab\there A\u263a"}),
    ("<?php return [3 => 'x', 'y'];", {"3": "x", "4": "y"}),
    ("<?php /* made by hand */ return ['a' => 1]; // done\n?>", {"a": 1}),
])
def test_literals_read_as_php_means_them(text: str, value: object) -> None:
    assert read_php_return(text) == value


@pytest.mark.parametrize(("text", "problem"), [
    ("return [];", "not a PHP file"),
    ("<?php return ['a' => system('id')];", "line 1: 'system' is not a literal value"),
    ("<?php\nreturn [\n'a' => $secret];", "line 3: unexpected '$secret"),
    ("<?php return ['a' => 1] + ['b' => 2];", "unexpected \"+ ['b'"),
    ("<?php return ['a' => 1]; echo 'x';", "unexpected 'echo' after the returned value"),
    ("<?php return ['a' => 1", "expected ',' or ']', found 'the end'"),
    ('<?php return ["a$b" => 1];', "unexpected '\"a$b"),
])
def test_anything_else_is_refused_with_its_line(text: str, problem: str) -> None:
    with pytest.raises(PhpError) as caught:
        read_php_return(text)
    assert problem in str(caught.value)
