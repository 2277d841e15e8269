"""Reading the PHP files Cockpit keeps its model definitions in.

Cockpit writes `<?php return [ ... ];` with PHP's `var_export` style: short
or long (`array (...)`) arrays, `'key' => value` pairs, single-quoted
strings, numbers, `true`/`false`/`NULL`, and `"\\0"` joined with `.` for a
NUL byte. This reads exactly that literal subset; any other PHP (a function
call, a variable, a constant) is refused with the line it is on, so a hand
edited file never runs and never half-reads.
"""

from __future__ import annotations

import re
from typing import Any

TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|\#[^\n]*|/\*.*?\*/)
    |(?P<single>'(?:[^'\\]|\\.)*')
    |(?P<double>"(?:[^"\\$]|\\.)*")
    |(?P<number>-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0[xX][0-9a-fA-F]+|\d+))
    |(?P<word>[A-Za-z_\\][A-Za-z0-9_\\]*)
    |(?P<punct>=>|\?>|[\[\](),;.])
    """,
    re.VERBOSE | re.DOTALL,
)
DOUBLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "e": "\x1b", "0": "\0",
                  "\\": "\\", '"': '"', "$": "$"}


class PhpError(ValueError):
    """The file is not a PHP literal this reader takes."""


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            match = TOKEN.match(text, pos)
            if match is None:
                raise PhpError(f"line {self._line(pos)}: unexpected {text[pos:pos + 20]!r}")
            kind = match.lastgroup or ""
            if kind != "space":
                self.tokens.append((kind, match.group(), pos))
            pos = match.end()
        self.at = 0

    def _line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def peek(self) -> tuple[str, str, int]:
        if self.at >= len(self.tokens):
            return ("end", "", len(self.text))
        return self.tokens[self.at]

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        token = self.peek()
        if value is not None and token[1].lower() != value:
            raise PhpError(f"line {self._line(token[2])}: expected {value!r}, found {token[1] or 'the end'!r}")
        self.at += 1
        return token

    def value(self) -> Any:
        kind, text, pos = self.peek()
        if kind == "punct" and text == "[":
            self.take()
            return self.array("]")
        if kind == "word" and text.lower() == "array":
            self.take()
            self.take("(")
            return self.array(")")
        if kind in ("single", "double"):
            return self.string()
        if kind == "number":
            self.take()
            return _number(text)
        if kind == "word":
            self.take()
            word = text.lower().lstrip("\\")
            if word == "true":
                return True
            if word == "false":
                return False
            if word == "null":
                return None
        raise PhpError(f"line {self._line(pos)}: {text or 'the end'!r} is not a literal value")

    def string(self) -> str:
        parts = [self._one_string()]
        while self.peek()[1] == ".":  # var_export writes NUL as '' . "\0" . ''
            self.take()
            parts.append(self._one_string())
        return "".join(parts)

    def _one_string(self) -> str:
        kind, text, pos = self.take()
        if kind == "single":
            return re.sub(r"\\([\\'])", r"\1", text[1:-1])
        if kind == "double":
            return _double(text[1:-1], self._line(pos))
        raise PhpError(f"line {self._line(pos)}: expected a string, found {text!r}")

    def array(self, close: str) -> Any:
        """A PHP array: a list when its keys are 0, 1, 2... in order (as
        var_export writes lists), a dict otherwise."""
        pairs: list[tuple[Any, Any]] = []
        next_index = 0
        while self.peek()[1] != close:
            first = self.value()
            if self.peek()[1] == "=>":
                self.take()
                key, item = first, self.value()
                if isinstance(key, bool) or key is None or isinstance(key, float):
                    key = int(key) if isinstance(key, bool | float) else ""
                if isinstance(key, int):
                    next_index = max(next_index, key + 1)
            else:
                key, item = next_index, first
                next_index += 1
            pairs.append((key, item))
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != close:
                kind, text, pos = self.peek()
                raise PhpError(f"line {self._line(pos)}: expected ',' or {close!r}, found {text or 'the end'!r}")
        self.take(close)
        if all(key == index for index, (key, _) in enumerate(pairs)):
            return [item for _, item in pairs]
        return {str(key): item for key, item in pairs}


def _number(text: str) -> int | float:
    if text.lower().startswith(("0x", "-0x")):
        return int(text, 16)
    if any(c in text for c in ".eE"):
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise PhpError(f"{text} is too large a number")
        return value
    return int(text)


def _double(body: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in DOUBLE_ESCAPES:
                out.append(DOUBLE_ESCAPES[nxt])
                i += 2
                continue
            hexa = re.match(r"x([0-9a-fA-F]{1,2})|u\{([0-9a-fA-F]{1,6})\}", body[i + 1:])
            if hexa:
                out.append(chr(int(hexa.group(1) or hexa.group(2), 16)))
                i += 1 + hexa.end()
                continue
        out.append(char)
        i += 1
    return "".join(out)


def read_php_return(text: str) -> Any:
    """The value of a file `<?php return <literal>;`."""
    stripped = text.lstrip("\ufeff")
    if not stripped.lstrip().startswith("<?php"):
        raise PhpError("line 1: not a PHP file (no <?php)")
    body = stripped.lstrip()[len("<?php"):]
    reader = _Reader(body)
    reader.take("return")
    value = reader.value()
    if reader.peek()[1] == ";":
        reader.take()
    kind, rest, pos = reader.peek()
    if kind != "end" and rest != "?>":
        raise PhpError(f"line {reader._line(pos)}: unexpected {rest!r} after the returned value")
    return value
