"""What one GraphQL document may ask, checked before the engine validates
or runs it: the engine's own validation is quadratic in the fields that
share a selection (10,000 aliases took it minutes), so the document's
size is bounded first, by a walk that never expands the same fragment
twice on one path and stops after `MAX_VISITS` selections.

- depth: fields nested in fields (fragments count as what they hold);
- aliases: fields asked under another name, in the whole document;
- cost: every field counts the items its parents may answer, a list
  field multiplying what is below it by its `limit` (or, without one,
  `UNLIMITED_ITEMS`): `posts(limit: 20) { author { posts { title } } }`
  costs 20 + 20 + 20 × 100 + 20 × 100."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)

MAX_VISITS = 20_000  # selections walked at most, whatever the fragments multiply
UNLIMITED_ITEMS = 100  # what a list without `limit` is counted as


class TooMuch(Exception):
    """The document asks more than a request may: the message says what."""


@dataclass(frozen=True)
class Limits:
    max_depth: int
    max_aliases: int
    max_cost: int


def check_shape(document: DocumentNode, limits: Limits) -> None:
    """Depth, aliases and size, from the document alone (no schema)."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    aliases = 0
    for definition in document.definitions:
        selections = getattr(definition, "selection_set", None)
        if selections is not None:
            aliases += sum(1 for node in _nodes(selections) if isinstance(node, FieldNode) and node.alias)
    if aliases > limits.max_aliases:
        raise TooMuch(f"The query uses {aliases:,} aliases; at most {limits.max_aliases:,} are allowed")
    visits = [0]
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            _depth(definition.selection_set, fragments, 0, frozenset(), visits, limits.max_depth)


def _nodes(selections: SelectionSetNode) -> Iterator[Any]:
    """Every selection written in a selection set, nested ones too (each
    once, as written: fragments are not expanded here)."""
    stack = [selections]
    while stack:
        for node in stack.pop().selections:
            yield node
            inner = getattr(node, "selection_set", None)
            if inner is not None:
                stack.append(inner)


def _depth(selections: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode], depth: int,
           path: frozenset[str], visits: list[int], max_depth: int) -> None:
    for node in selections.selections:
        visits[0] += 1
        if visits[0] > MAX_VISITS:
            raise TooMuch(f"The query is too large: it expands to more than {MAX_VISITS:,} selections")
        if isinstance(node, FieldNode):
            if node.selection_set is not None:
                if depth + 1 > max_depth:
                    raise TooMuch(f"The query is nested deeper than {max_depth} levels")
                _depth(node.selection_set, fragments, depth + 1, path, visits, max_depth)
        elif isinstance(node, InlineFragmentNode):
            _depth(node.selection_set, fragments, depth, path, visits, max_depth)
        elif isinstance(node, FragmentSpreadNode):
            name = node.name.value
            fragment = fragments.get(name)
            if fragment is not None and name not in path:  # a cycle is the validator's to name
                _depth(fragment.selection_set, fragments, depth, path | {name}, visits, max_depth)


def check_cost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode,
               variables: dict[str, Any], limits: Limits) -> int:
    """The operation's cost (after validation: every field is known);
    `TooMuch` past the limit."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    root = schema.get_root_type(operation.operation)
    if root is None:
        return 0
    total = _cost(root, operation.selection_set, fragments, 1, frozenset(), variables, schema)
    if total > limits.max_cost:
        raise TooMuch(f"The query may read {total:,} items and fields; at most {limits.max_cost:,} are allowed "
                      "(ask for fewer items with limit, or less nesting)")
    return total


def _cost(parent: GraphQLObjectType, selections: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode],
          items: int, path: frozenset[str], variables: dict[str, Any], schema: GraphQLSchema) -> int:
    total = 0
    for node in selections.selections:
        if isinstance(node, FieldNode):
            field = parent.fields.get(node.name.value)
            if field is None:
                continue  # __typename and introspection
            total += items
            named = get_named_type(field.type)
            if node.selection_set is not None and isinstance(named, GraphQLObjectType):
                below = items * _items(field, node, variables, parent)
                total += _cost(named, node.selection_set, fragments, below, path, variables, schema)
        elif isinstance(node, InlineFragmentNode):
            kind = schema.get_type(node.type_condition.name.value) if node.type_condition else parent
            if isinstance(kind, GraphQLObjectType):
                total += _cost(kind, node.selection_set, fragments, items, path, variables, schema)
        elif isinstance(node, FragmentSpreadNode):
            fragment = fragments.get(node.name.value)
            if fragment is not None and node.name.value not in path:
                kind = schema.get_type(fragment.type_condition.name.value)
                if isinstance(kind, GraphQLObjectType):
                    total += _cost(kind, fragment.selection_set, fragments, items, path | {node.name.value},
                                   variables, schema)
    return total


def _items(field: Any, node: FieldNode, variables: dict[str, Any], parent: GraphQLObjectType) -> int:
    """How many items a field may answer: 1, or for a list (or a
    connection: a `...Connection` object) its `limit` (`first`)
    argument's value, else what the field says it usually has (its
    `extensions["items"]`: a tree item's children) or UNLIMITED_ITEMS. A
    connection's `items` list is counted by the field that holds the
    connection."""
    if parent.name.endswith("Connection"):
        return 1
    kind = field.type
    usual = (field.extensions or {}).get("items")
    if isinstance(usual, int):
        return usual
    if isinstance(kind, GraphQLNonNull):
        kind = kind.of_type
    limit = _argument(node, ("limit", "first"), variables)
    if isinstance(kind, GraphQLList) or get_named_type(kind).name.endswith("Connection") or limit is not None:
        return max(1, min(limit, 10_000)) if isinstance(limit, int) and limit > 0 else UNLIMITED_ITEMS
    return 1


def _argument(node: FieldNode, names: tuple[str, ...], variables: dict[str, Any]) -> Any:
    for argument in node.arguments or ():
        if argument.name.value in names:
            value = argument.value
            if isinstance(value, IntValueNode):
                return int(value.value)
            if isinstance(value, VariableNode):
                return variables.get(value.name.value)
    return None
