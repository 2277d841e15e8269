"""Cockpit's GraphQL schema, as its clients introspect and query it: the
root fields `content`, `contentTree` and one `<name>Model` per model, the
mutations `saveContentItem` and `deleteContentItem`, the scalars
`JsonType` and `NumericType` (docs/graphql.md, "Cockpit's schema").

Every read goes through the content service, as REST's do (filters,
locales, populate, published items for readers, permissions); where
Cockpit's own answer is wrong, this one is right and docs/cockpit.md says
how they differ."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLField,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLString,
)

from quire.auth.service import Identity
from quire.content import types
from quire.content.models import Model
from quire.content.reads import ReadOptions
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest, NotFound
from quire.gql.request import json_text
from quire.gql.scalars import JSON_TYPE, NUMERIC_TYPE
from quire.modules import Services
from quire.persona.request import Persona

NAME = re.compile(r"^[_A-Za-z][_0-9A-Za-z]*$")
# Cockpit's string types (a Quire type's JSON Schema says the same for a module's)
STRINGS = frozenset({"text", "longtext", "markdown", "wysiwyg", "code", "color", "date", "datetime", "time",
                     "select"})


def graphql_name(name: str) -> bool:
    """Whether a model's or field's name can be a GraphQL name (`__` is
    the schema's own)."""
    return bool(NAME.match(name)) and not name.startswith("__")


class Context:
    """What resolvers need of one request: the services, the caller, the
    request's personalization (its `x-persona` headers or `persona`
    parameter, applied to every answer as on REST)."""

    def __init__(self, services: Services, identity: Identity, max_items: int, persona: Persona | None) -> None:
        self.services = services
        self.content = services.get(ContentService)
        self.identity = identity
        self.max_items = max_items
        self.persona = persona


def personal(context: Context, value: Any) -> Any:
    """An answer as the request's persona sees it (variants chosen)."""
    return value if context.persona is None else context.persona.apply(value)


# -- reading -------------------------------------------------------------------

def json_arg(value: Any, name: str) -> Any:
    """A JsonType argument; a JSON text is read as the value it writes
    (`filter: "{\\"rating\\": {\\"$gt\\": 2}}"`: `$` cannot start a name
    in a GraphQL object literal), and `""` is none."""
    return json_text(value, name)


def _locale(value: Any) -> str | None:
    """As in Cockpit, `default` (the argument's default) reads the default
    language's values, without the other languages' `<field>_<code>` keys."""
    return None if value in (None, "") else value


def locale_keys(value: Any, locale: str | None) -> Any:
    """Cockpit's `:locale` in filter and sort keys: the requested locale
    (`title:locale` is `title:de` with `locale: "de"`, `title` with none or
    `default`), at every depth."""
    if isinstance(value, list):
        return [locale_keys(v, locale) for v in value]
    if not isinstance(value, dict):
        return value
    code = f":{locale}" if locale and locale != "default" else ""
    return {(k.replace(":locale", code) if isinstance(k, str) and ":locale" in k else k): locale_keys(v, locale)
            for k, v in value.items()}


def read_options(args: dict[str, Any], max_items: int) -> ReadOptions:
    limit, skip = args.get("limit"), args.get("skip")
    if limit == 0:
        limit = None  # as on REST: no limit (up to max_items)
    if limit is not None and (limit < 1 or limit > max_items):
        raise BadRequest(f"<limit> must be from 1 to {max_items:,} ([graphql] max_items)")
    if skip is not None and skip < 0:
        raise BadRequest("<skip> must be 0 or more")
    # `<name>Model`'s `projection` is read as Cockpit reads it: not at all
    # (its selection says which fields are answered)
    locale = _locale(args.get("locale"))
    return ReadOptions(filter=locale_keys(json_arg(args.get("filter"), "filter"), locale),
                       sort=locale_keys(json_arg(args.get("sort"), "sort"), locale),
                       fields=json_arg(args.get("fields"), "fields"), populate=args.get("populate") or 0,
                       locale=locale, limit=limit, skip=skip)


def read_list(context: Context, model: str, opts: ReadOptions) -> list[dict[str, Any]]:
    """A list as REST answers it, at most `max_items`: without a limit, a
    list that has more answers an error naming the way out (Cockpit
    answers every item, which a large model cannot hold in memory)."""
    asked = opts.limit
    opts.limit = asked if asked is not None else context.max_items + 1
    page = context.content.list_page(model, opts, context.identity)
    rows = page.rows
    if asked is None and len(rows) > context.max_items:
        raise BadRequest(f"{model} has more than {context.max_items:,} items here: ask for a page with "
                         "limit and skip")
    return personal(context, [orjson.loads(row) for row in rows])


def content_list(source: Any, info: GraphQLResolveInfo, model: str, **args: Any) -> list[Any]:
    context: Context = info.context
    found = context.content.models.find(model)
    if found is None:
        return []  # as Cockpit: an unknown model is an empty list
    opts = read_options(args, context.max_items)
    if found.type == "singleton":
        try:
            return [personal(context, context.content.item(model, None, opts, context.identity))]
        except NotFound:
            return []
    return read_list(context, model, opts)


def content_tree(source: Any, info: GraphQLResolveInfo, model: str, parent: str | None = None,
                 **args: Any) -> list[Any]:
    context: Context = info.context
    if context.content.models.find(model) is None:
        return []
    return personal(context, context.content.tree(model, parent, read_options(args, context.max_items),
                                                  context.identity))


def model_list(name: str) -> Callable[..., list[Any]]:
    def resolve(source: Any, info: GraphQLResolveInfo, _id: str | None = None, **args: Any) -> list[Any]:
        context: Context = info.context
        opts = read_options(args, context.max_items)
        if _id is not None:  # as Cockpit: the id wins over a filter
            opts.filter = None
            try:
                return [personal(context, context.content.item(name, _id, opts, context.identity))]
            except NotFound:
                return []
        return read_list(context, name, opts)
    return resolve


def model_item(name: str) -> Callable[..., Any]:
    def resolve(source: Any, info: GraphQLResolveInfo, **args: Any) -> Any:
        context: Context = info.context
        try:
            return personal(context, context.content.item(name, None, read_options(args, context.max_items),
                                                          context.identity))
        except NotFound:
            return None
    return resolve


# -- writing -------------------------------------------------------------------

async def save_item(source: Any, info: GraphQLResolveInfo, model: str, data: Any) -> dict[str, Any]:
    """`saveContentItem`: the saved item as REST answers it, or the reason
    in `error`; a new item when `data` has no `_id`."""
    context: Context = info.context
    if not isinstance(data, dict) or not data:
        return {"item": None, "error": "Item data is missing"}
    try:
        item = await context.content.save(model, data, context.identity)
    except ApiError as exc:
        return {"item": None, "error": exc.message}
    return {"item": item, "error": None}


async def delete_item(source: Any, info: GraphQLResolveInfo, model: str, id: str) -> dict[str, Any]:
    context: Context = info.context
    try:
        await context.content.delete(model, id, context.identity)
    except ApiError as exc:
        return {"success": False, "error": exc.message}
    return {"success": True, "error": None}


SAVE_OUTPUT = GraphQLObjectType("saveContentItemOutput", {"item": GraphQLField(JSON_TYPE),
                                                          "error": GraphQLField(GraphQLString)})
DELETE_OUTPUT = GraphQLObjectType("deleteContentItemOutput", {"success": GraphQLField(GraphQLBoolean),
                                                              "error": GraphQLField(GraphQLString)})


# -- the schema's part ---------------------------------------------------------

def _read_args(with_fields: bool = True) -> dict[str, GraphQLArgument]:
    args = {"limit": GraphQLArgument(GraphQLInt), "skip": GraphQLArgument(GraphQLInt),
            "sort": GraphQLArgument(JSON_TYPE),
            "locale": GraphQLArgument(GraphQLString, default_value="default"),
            "populate": GraphQLArgument(GraphQLInt, default_value=0)}
    if with_fields:
        args["fields"] = GraphQLArgument(JSON_TYPE)
        args["filter"] = GraphQLArgument(JSON_TYPE)
    return args


class TypeNames:
    """The object types of `set` fields, named as Cockpit names them
    (`Set<Field>`, then `Set<Field>1`, `Set<Field>2` for fields of one
    name in several models), once per schema."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def new(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        return name


def field_type(definition: dict[str, Any], names: TypeNames) -> GraphQLOutputType | None:
    """A model field's GraphQL type, as Cockpit types it; None for a field
    whose name cannot be a GraphQL name."""
    name, kind = definition.get("name", ""), definition.get("type")
    if not graphql_name(name):
        return None
    out: GraphQLOutputType
    if kind == "set":
        out = set_type(definition, names)
    elif kind == "tags":
        out = GraphQLList(GraphQLString)
    else:
        out = _scalar(kind)
    if definition.get("multiple") and kind not in ("tags",):
        out = GraphQLList(out)
    if definition.get("required") and not isinstance(out, GraphQLNonNull):
        out = GraphQLNonNull(out)
    return out


def _scalar(kind: Any) -> GraphQLOutputType:
    if kind in STRINGS:
        return GraphQLString
    if kind == "number":
        return NUMERIC_TYPE
    if kind == "boolean":
        return GraphQLBoolean
    record = types.get(kind) if kind not in ("object", "table", "asset", "contentItemLink", "variants") else None
    schema_type = (record.schema or {}).get("type") if record is not None else None
    return {"string": GraphQLString, "number": NUMERIC_TYPE, "integer": NUMERIC_TYPE,
            "boolean": GraphQLBoolean}.get(schema_type, JSON_TYPE) if isinstance(schema_type, str) else JSON_TYPE


def set_type(definition: dict[str, Any], names: TypeNames) -> GraphQLObjectType:
    name = definition["name"]
    inner = [f for f in (definition.get("opts") or {}).get("fields") or [] if isinstance(f, dict)]
    type_name = names.new("Set" + name[:1].upper() + name[1:])
    # made at once (Cockpit's types hold no cycles: links are JsonType), so
    # every name is taken before the typed schema picks its own
    out = {}
    for sub in inner:
        kind = field_type(sub, names)
        if kind is not None:
            out[sub["name"]] = GraphQLField(kind)
    return GraphQLObjectType(type_name, out or {"_empty": GraphQLField(JSON_TYPE, description="A set without fields")})


def model_type(model: Model, names: TypeNames) -> GraphQLObjectType:
    """`<name>Model`: system fields, then the model's fields."""
    listed = model.type != "singleton"
    system: dict[str, GraphQLField] = {
        "_id": GraphQLField(GraphQLNonNull(GraphQLString) if listed else GraphQLString),
        "_state": GraphQLField(GraphQLNonNull(GraphQLInt) if listed else GraphQLInt),
        # nullable: an item written with an API key has no user to name
        "_cby": GraphQLField(GraphQLString),
        "_created": GraphQLField(GraphQLNonNull(GraphQLInt) if listed else GraphQLInt),
        "_mby": GraphQLField(GraphQLString),
        "_modified": GraphQLField(GraphQLNonNull(GraphQLInt) if listed else GraphQLInt),
    }
    if model.type == "tree":
        system["_pid"] = GraphQLField(GraphQLString)
        system["_o"] = GraphQLField(GraphQLInt)
    type_name = f"{model.name}Model"
    names.taken.add(type_name)
    out = dict(system)
    for definition in model.fields:
        kind = field_type(definition, names)
        if kind is not None and definition["name"] not in out:
            out[definition["name"]] = GraphQLField(kind)
    return GraphQLObjectType(type_name, out)


def query_fields(models: list[Model], identity: Identity, names: TypeNames) -> dict[str, GraphQLField]:
    """The root fields of Cockpit's schema for what `identity` may read."""
    out: dict[str, GraphQLField] = {
        "content": GraphQLField(GraphQLList(JSON_TYPE), {"model": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                                                         **_read_args()}, content_list),
        "contentTree": GraphQLField(
            GraphQLList(JSON_TYPE),
            {"model": GraphQLArgument(GraphQLNonNull(GraphQLString)),
             "parent": GraphQLArgument(GraphQLString),
             "locale": GraphQLArgument(GraphQLString, default_value="default"),
             "populate": GraphQLArgument(GraphQLInt, default_value=0),
             "fields": GraphQLArgument(JSON_TYPE)}, content_tree),
    }
    for model in models:
        if not graphql_name(model.name) or not identity.can(f"content/{model.name}/read"):
            continue
        kind = model_type(model, names)
        if model.type == "singleton":
            out[f"{model.name}Model"] = GraphQLField(
                kind, {"locale": GraphQLArgument(GraphQLString, default_value="default"),
                       "populate": GraphQLArgument(GraphQLInt, default_value=0)}, model_item(model.name))
        else:
            args = {"_id": GraphQLArgument(GraphQLString), **_read_args(with_fields=False),
                    "projection": GraphQLArgument(GraphQLString, default_value=""),
                    "filter": GraphQLArgument(JSON_TYPE, default_value="")}
            out[f"{model.name}Model"] = GraphQLField(GraphQLList(kind), args, model_list(model.name))
    return out


def mutation_fields() -> dict[str, GraphQLField]:
    return {
        "saveContentItem": GraphQLField(SAVE_OUTPUT, {"model": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                                                      "data": GraphQLArgument(GraphQLNonNull(JSON_TYPE))},
                                        save_item),
        "deleteContentItem": GraphQLField(DELETE_OUTPUT, {"model": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                                                          "id": GraphQLArgument(GraphQLNonNull(GraphQLString))},
                                          delete_item),
    }
