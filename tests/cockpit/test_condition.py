"""Cockpit's field conditions (JavaScript) as showWhen rules: the simple
ones only; anything else is not guessed at."""

from __future__ import annotations

import pytest

from quire.cockpit.condition import to_rule
from quire.content.conditions import holds


@pytest.mark.parametrize(("text", "rule"), [
    ("data.category == 'events'", {"==": [{"var": "category"}, "events"]}),
    ('data.n >= 3 && data.ok', {"and": [{">=": [{"var": "n"}, 3]}, {"!!": [{"var": "ok"}]}]}),
    ("!data.hidden || data.kind === \"it's\"", {"or": [{"!": [{"var": "hidden"}]}, {"===": [{"var": "kind"}, "it's"]}]}),
    ("data.x != null", {"!=": [{"var": "x"}, None]}),
])
def test_simple_conditions_become_rules(text: str, rule: dict[str, object]) -> None:
    assert to_rule(text) == rule


@pytest.mark.parametrize("text", [
    "data.a == 1 && (data.b || data.c)", "fetch('/x')", "data.tags.includes('a')", "!data.a == 1", "", None, 42,
    "data.a == 'x'; alert(1)", "x" * 600])
def test_anything_else_is_left_to_the_report(text: object) -> None:
    assert to_rule(text) is None


def test_a_translated_rule_holds_as_the_javascript_did() -> None:
    rule = to_rule("data.category == 'events' && data.count > 2")
    assert holds(rule, {"category": "events", "count": 3}) and not holds(rule, {"category": "events", "count": 1})
    assert not holds(rule, {"category": "news", "count": 9})
