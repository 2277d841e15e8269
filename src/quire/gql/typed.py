"""The typed schema, beside Cockpit's names (docs/graphql.md, "Typed"):
per model a list field answering a connection of typed objects (`posts`
→ `PostConnection {items, total, next}`), one item (`post(id:)`), a count
(`postsCount`), and typed mutations (`createPost`, `updatePost`,
`deletePost`) with REST's checks, permissions, events and `_rev`
conflicts.

Links are typed objects of the linked model, assets `Asset` objects with
image addresses by size. The store is read once per level of links: the
list is read with `populate` as deep as the selection's links go (REST's
populate fetches every hop's links in one query per linked model)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import orjson
from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLField,
    GraphQLFloat,
    GraphQLID,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    GraphQLString,
    InlineFragmentNode,
    SelectionSetNode,
)

from quire.auth.service import Identity
from quire.content.models import Model
from quire.content.reads import ReadOptions
from quire.errors import NotFound
from quire.gql.cockpit import STRINGS, Context, graphql_name, json_arg, personal, read_options
from quire.gql.scalars import JSON_TYPE

RESERVED = {"Query", "Mutation", "Asset", "JsonType", "NumericType", "String", "Int", "Float", "Boolean", "ID",
            "saveContentItemOutput", "deleteContentItemOutput"}


def free(name: str, taken: set[str]) -> str:
    """`name`, or with a number after it when the schema has it already
    (Cockpit's types are named first)."""
    base = name
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}{n}"
    taken.add(out)
    return out
MAX_LINK_DEPTH = 5  # as REST's populate
FAST = {"fast": True}  # a root field fast.py may run without the executor


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\-\s]+|(?<=[a-z0-9])(?=[A-Z])", name) if w]


def pascal(name: str) -> str:
    return "".join(w[:1].upper() + w[1:] for w in _words(name))


def camel(name: str) -> str:
    text = pascal(name)
    return text[:1].lower() + text[1:]


def singular(word: str) -> str:
    """English plural to singular, for the common endings; a word that
    does not end so is its own singular (`news`, `staff`)."""
    lower = word.lower()
    if lower.endswith("ies") and len(word) > 3:
        return word[:-3] + ("Y" if word[-3].isupper() else "y")
    if lower.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(word) > 1:
        return word[:-1]
    return word


class Names:
    """The typed names of one model: `blog_posts` → list `blogPosts`,
    type `BlogPost`, one item `blogPost`, count `blogPostsCount`; a
    singleton `settings` → type `Settings`, field `settings`."""

    def __init__(self, model: Model, taken: set[str]) -> None:
        self.list = camel(model.name)
        # a singleton is one thing by its name (`settings`: `Settings`)
        self.type = free(pascal(model.name) if model.type == "singleton" else singular(pascal(model.name)), taken)
        self.one = camel(self.type)
        if self.one == self.list:
            self.one += "Item"
        self.count = self.list + "Count"


# -- assets ----------------------------------------------------------------------

def _image_url(asset: dict[str, Any], info: GraphQLResolveInfo, **args: Any) -> str | None:
    if not isinstance(asset, dict) or asset.get("type") != "image" or not asset.get("_id"):
        return None
    params = {key: value for key, value in (("w", args.get("width")), ("h", args.get("height")),
                                             ("m", args.get("mode")), ("q", args.get("quality")),
                                             ("mime", args.get("format"))) if value is not None}
    query = "?" + urlencode(params) if params else ""
    return f"/api/assets/image/{asset['_id']}{query}"


ASSET = GraphQLObjectType("Asset", lambda: {
    "_id": GraphQLField(GraphQLNonNull(GraphQLID)),
    "path": GraphQLField(GraphQLString), "title": GraphQLField(GraphQLString),
    "description": GraphQLField(GraphQLString), "altText": GraphQLField(GraphQLString),
    "mime": GraphQLField(GraphQLString), "type": GraphQLField(GraphQLString), "size": GraphQLField(GraphQLInt),
    "width": GraphQLField(GraphQLInt), "height": GraphQLField(GraphQLInt),
    "colors": GraphQLField(GraphQLList(GraphQLString)), "thumbhash": GraphQLField(GraphQLString),
    "tags": GraphQLField(GraphQLList(GraphQLString)), "folder": GraphQLField(GraphQLString),
    "fp": GraphQLField(JSON_TYPE, description="The focal point {x, y}, 0 to 1, or null (the centre)"),
    "url": GraphQLField(GraphQLString, resolve=lambda asset, info: f"/storage/uploads{asset.get('path', '')}"
                        if isinstance(asset, dict) and asset.get("path") else None,
                        description="The file as uploaded"),
    "image": GraphQLField(
        GraphQLString, {"width": GraphQLArgument(GraphQLInt), "height": GraphQLArgument(GraphQLInt),
                        "mode": GraphQLArgument(GraphQLString, description="thumbnail, bestFit, resize, fitToWidth, "
                                                                             "fitToHeight"),
                        "quality": GraphQLArgument(GraphQLInt), "format": GraphQLArgument(GraphQLString)},
        _image_url, description="The address of the picture at this size (null for other files)"),
}, description="An uploaded file (docs/assets.md)")

# a layout field's blocks (content/types/layout.py), as Cockpit stores them;
# their lists are part of the item (at most 500 blocks), not reads to count
EMBEDDED = {"items": 1}
LAYOUT_COMPONENT: GraphQLObjectType = GraphQLObjectType("LayoutComponent", lambda: {
    "component": GraphQLField(GraphQLNonNull(GraphQLString), description="The component's name"),
    "label": GraphQLField(GraphQLString), "id": GraphQLField(GraphQLString),
    "data": GraphQLField(JSON_TYPE, description="The component's fields and values"),
    "children": GraphQLField(GraphQLList(LAYOUT_COMPONENT), description="A section's components",
                             extensions=EMBEDDED),
    "columns": GraphQLField(GraphQLList(LAYOUT_COLUMN), description="A grid's columns", extensions=EMBEDDED),
}, description="A block of a layout field")
LAYOUT_COLUMN: GraphQLObjectType = GraphQLObjectType("LayoutColumn", lambda: {
    "components": GraphQLField(GraphQLList(LAYOUT_COMPONENT), extensions=EMBEDDED)})


# -- the types of a role's schema -----------------------------------------------

class Builder:
    """The typed part of one role's schema."""

    def __init__(self, models: list[Model], identity: Identity, taken: set[str]) -> None:
        self.identity = identity
        taken |= RESERVED
        self.models = {m.name: m for m in models if graphql_name(m.name) and identity.can(f"content/{m.name}/read")}
        self.names = {name: Names(m, taken) for name, m in self.models.items()}
        self.objects: dict[str, GraphQLObjectType] = {}
        self.inputs: dict[str, GraphQLInputObjectType] = {}
        self.taken = taken

    def new_name(self, base: str) -> str:
        return free(base, self.taken)

    # -- output types -------------------------------------------------------

    def object(self, name: str) -> GraphQLObjectType:
        found = self.objects.get(name)
        if found is None:
            model = self.models[name]
            found = self.objects[name] = GraphQLObjectType(
                self.names[name].type, lambda: self._fields(model, model.fields, self.names[name].type),
                description=f"An item of the model {name} ({model.type})",
                extensions={"quire_model": name})  # link_depth counts a hop through it
        return found

    def _fields(self, model: Model | None, fields: list[dict[str, Any]], owner: str) -> dict[str, GraphQLField]:
        out: dict[str, GraphQLField] = {}
        if model is not None:
            out["_id"] = GraphQLField(GraphQLNonNull(GraphQLID))
            out["_state"] = GraphQLField(GraphQLInt)
            out["_created"] = GraphQLField(GraphQLInt)
            out["_modified"] = GraphQLField(GraphQLInt)
            out["_rev"] = GraphQLField(GraphQLInt, description="The revision: send it back to refuse a stale save")
            out["_cby"] = GraphQLField(GraphQLID)
            out["_mby"] = GraphQLField(GraphQLID)
            if model.type == "tree":
                out["_pid"] = GraphQLField(GraphQLID)
                out["_o"] = GraphQLField(GraphQLInt)
                out["children"] = GraphQLField(
                    GraphQLList(GraphQLNonNull(self.object(model.name))), resolve=_children,
                    description="The item's children, read with the tree (`<model>Tree`); null in a list",
                    extensions={"items": 10})  # what the cost counts of children (limits.py)
        for definition in fields:
            name = definition.get("name", "")
            if graphql_name(name) and name not in out:
                # a layout's blocks are part of the item, read with it: no list of reads to count
                usual = {"items": 1} if definition.get("type") == "layout" else None
                out[name] = GraphQLField(self._output(definition, owner), description=definition.get("label") or None,
                                         extensions=usual)
        return out or {"_empty": GraphQLField(JSON_TYPE)}

    def _output(self, definition: dict[str, Any], owner: str) -> GraphQLOutputType:
        kind = definition.get("type")
        out: GraphQLOutputType
        if kind == "contentItemLink":
            target = (definition.get("opts") or {}).get("link")
            out = self.object(target) if target in self.models else JSON_TYPE
        elif kind == "asset":
            out = ASSET
        elif kind == "set":
            inner = [f for f in (definition.get("opts") or {}).get("fields") or [] if isinstance(f, dict)]
            type_name = self.new_name(owner + pascal(definition["name"]))
            out = GraphQLObjectType(type_name, lambda: self._fields(None, inner, type_name))
        elif kind == "tags":
            return GraphQLList(GraphQLString)
        elif kind == "layout":
            return GraphQLList(LAYOUT_COMPONENT)
        else:
            out = _scalar(kind)
        return GraphQLList(out) if definition.get("multiple") else out

    # -- input types ----------------------------------------------------------

    def input(self, name: str) -> GraphQLInputObjectType:
        found = self.inputs.get(name)
        if found is None:
            model = self.models[name]
            type_name = self.new_name(self.names[name].type + "Input")
            found = self.inputs[name] = GraphQLInputObjectType(
                type_name, lambda: self._input_fields(model.fields, type_name),
                description=f"The fields of an item of {name} to save (those left out are not changed on update)")
        return found

    def _input_fields(self, fields: list[dict[str, Any]], owner: str) -> dict[str, GraphQLInputField]:
        out: dict[str, GraphQLInputField] = {}
        for definition in fields:
            name = definition.get("name", "")
            if graphql_name(name):
                out[name] = GraphQLInputField(self._input(definition, owner))
        return out or {"_empty": GraphQLInputField(JSON_TYPE)}

    def _input(self, definition: dict[str, Any], owner: str) -> GraphQLInputType:
        kind = definition.get("type")
        out: GraphQLInputType
        if kind in ("contentItemLink", "asset"):
            out = GraphQLID
        elif kind == "set":
            inner = [f for f in (definition.get("opts") or {}).get("fields") or [] if isinstance(f, dict)]
            type_name = self.new_name(owner + pascal(definition["name"]))
            out = GraphQLInputObjectType(type_name, lambda: self._input_fields(inner, type_name))
        elif kind == "tags":
            return GraphQLList(GraphQLString)
        else:
            scalar = _scalar(kind)
            out = scalar
        return GraphQLList(out) if definition.get("multiple") else out


def _scalar(kind: Any) -> Any:
    if kind in STRINGS:
        return GraphQLString
    if kind == "number":
        return GraphQLFloat
    if kind == "boolean":
        return GraphQLBoolean
    return JSON_TYPE


# -- reading -------------------------------------------------------------------

def link_depth(selection: SelectionSetNode | None, info: GraphQLResolveInfo, kind: Any, depth: int = 0) -> int:
    """How many hops of links the selection reads below an object of
    type `kind`: the `populate` one read needs."""
    if selection is None or depth >= MAX_LINK_DEPTH:
        return 0
    deepest = 0
    for node in _fields_of(selection, info):
        field = kind.fields.get(node.name.value) if isinstance(kind, GraphQLObjectType) else None
        if field is None or node.selection_set is None:
            continue
        inner = field.type
        while isinstance(inner, (GraphQLNonNull, GraphQLList)):
            inner = inner.of_type
        if inner is ASSET:
            continue
        hop = 1 if (getattr(inner, "extensions", None) or {}).get("quire_model") else 0
        deepest = max(deepest, hop + link_depth(node.selection_set, info, inner, depth + hop))
    return deepest


def _fields_of(selection: SelectionSetNode, info: GraphQLResolveInfo) -> list[FieldNode]:
    out: list[FieldNode] = []
    stack = [selection]
    seen: set[str] = set()
    while stack:
        for node in stack.pop().selections:
            if isinstance(node, FieldNode):
                out.append(node)
            elif isinstance(node, InlineFragmentNode):
                stack.append(node.selection_set)
            elif isinstance(node, FragmentSpreadNode) and node.name.value not in seen:
                seen.add(node.name.value)
                fragment = info.fragments.get(node.name.value)
                if fragment is not None:
                    stack.append(fragment.selection_set)
    return out


def _populate(info: GraphQLResolveInfo, item_type: Any, under: str | None = None) -> int:
    """The populate depth the field's selection needs (`under`: the
    connection's field that holds the items)."""
    depth = 0
    for node in info.field_nodes:
        selection = node.selection_set
        if under is not None and selection is not None:
            for inner in _fields_of(selection, info):
                if inner.name.value == under:
                    depth = max(depth, link_depth(inner.selection_set, info, item_type))
        else:
            depth = max(depth, link_depth(selection, info, item_type))
    return depth


def _selected(info: GraphQLResolveInfo, item_type: GraphQLObjectType, under: str | None = None) -> dict[str, int] | None:
    """The projection of the item fields the selection reads (`under`: the
    connection's field holding the items); None when it reads a field the
    projection cannot name (a tree item's children)."""
    names: set[str] = {"_id"}
    for node in info.field_nodes:
        selection = node.selection_set
        if selection is None:
            continue
        inner = [n for n in _fields_of(selection, info) if under is None or n.name.value == under]
        for holder in inner if under is not None else [node]:
            if holder.selection_set is None:
                continue
            for field in _fields_of(holder.selection_set, info):
                name = field.name.value
                if name == "children":
                    return None
                if name in item_type.fields:
                    names.add(name)
    return dict.fromkeys(sorted(names), 1)


def _wants(info: GraphQLResolveInfo, name: str) -> bool:
    return any(inner.name.value == name for node in info.field_nodes if node.selection_set is not None
               for inner in _fields_of(node.selection_set, info))


_SHAPES: dict[tuple[int, str, str | None], tuple[Any, tuple[dict[str, int] | None, int, bool]]] = {}
MAX_SHAPES = 10_000


def _shape(info: GraphQLResolveInfo, item_type: GraphQLObjectType,
           under: str | None) -> tuple[dict[str, int] | None, int, bool]:
    """What a field's selection reads of its items: the projection, the
    populate depth, whether it asks for the total. A document is kept
    parsed, so its nodes come again with the same query: worked out once
    per node (the node itself is kept with the answer, so an id reused by
    another node after the document went never matches)."""
    node = info.field_nodes[0]
    key = (id(node), item_type.name, under)
    found = _SHAPES.get(key)
    if found is not None and found[0] is node and len(info.field_nodes) == 1:
        return found[1]
    shape = (_selected(info, item_type, under), _populate(info, item_type, under), _wants(info, "total"))
    if len(_SHAPES) >= MAX_SHAPES:
        _SHAPES.clear()
    _SHAPES[key] = (node, shape)
    return shape


def list_resolver(name: str, item_type: GraphQLObjectType) -> Callable[..., Any]:
    def resolve(source: Any, info: GraphQLResolveInfo, **args: Any) -> dict[str, Any]:
        context: Context = info.context
        limit = args.get("limit")
        if limit is None:
            args["limit"] = min(100, context.max_items)
        opts = read_options(args, context.max_items)
        opts.after = args.get("after")
        fields, depth, total = _shape(info, item_type, "items")
        if total and opts.skip is None and opts.after is None:
            opts.skip = 0  # the page's total is counted with it
        # only the fields the selection reads, links as deep as it reads
        # them (one query per linked model and hop): read, rendered and kept
        # as REST's list pages are; the cursor is bound to the order alone,
        # so another selection pages on with it
        opts.fields, opts.populate = fields, depth
        opts.cursor_by_order = True
        page = context.content.list_page(name, opts, context.identity)
        items = [orjson.loads(row) for row in page.rows]
        return {"items": personal(context, items), "total": page.total, "next": page.next}
    return resolve


def one_resolver(name: str, item_type: GraphQLObjectType, singleton: bool) -> Callable[..., Any]:
    def resolve(source: Any, info: GraphQLResolveInfo, id: str | None = None, **args: Any) -> Any:
        context: Context = info.context
        opts = ReadOptions(locale=args.get("locale") or None, populate=_populate(info, item_type))
        preview, draft = args.get("preview"), bool(args.get("draft"))
        try:
            if preview or draft:
                identity = context.identity
                if preview:
                    identity = context.content.preview_identity(name, id, preview, identity)
                item, _, is_draft = context.content.item_or_draft(name, id, opts, identity, links_as=context.identity)
            else:
                item = context.content.item(name, None if singleton else id, opts, context.identity)
        except NotFound:
            return None
        return personal(context, item)
    return resolve


def _children(item: Any, info: GraphQLResolveInfo) -> Any:
    return item.get("_children") if isinstance(item, dict) else None


def tree_resolver(name: str, item_type: GraphQLObjectType) -> Callable[..., Any]:
    def resolve(source: Any, info: GraphQLResolveInfo, parent: str | None = None, locale: str | None = None) -> Any:
        context: Context = info.context
        opts = ReadOptions(locale=locale or None, populate=_populate(info, item_type))
        return personal(context, context.content.tree(name, parent, opts, context.identity))
    return resolve


def count_resolver(name: str) -> Callable[..., int]:
    def resolve(source: Any, info: GraphQLResolveInfo, filter: Any = None) -> int:
        context: Context = info.context
        return context.content.count(name, ReadOptions(filter=json_arg(filter, "filter")), context.identity)
    return resolve


# -- writing -------------------------------------------------------------------

def _as_stored(model: Model, data: dict[str, Any], models: dict[str, Model]) -> dict[str, Any]:
    """A typed input as REST's save takes it: a link's id becomes
    `{"_model", "_id"}`, an asset's id `{"_id"}`."""
    fields = model.by_name
    out: dict[str, Any] = {}
    for key, value in data.items():
        definition = fields.get(key)
        kind = definition.get("type") if definition else None
        if kind == "contentItemLink" and value is not None:
            target = (definition or {}).get("opts", {}).get("link")
            value = [{"_model": target, "_id": v} for v in value] if isinstance(value, list) else \
                {"_model": target, "_id": value}
        elif kind == "asset" and value is not None:
            value = [{"_id": v} for v in value] if isinstance(value, list) else {"_id": value}
        out[key] = value
    return out


def save_resolver(name: str, model: Model, models: dict[str, Model], update: bool) -> Callable[..., Any]:
    async def resolve(source: Any, info: GraphQLResolveInfo, data: dict[str, Any], id: str | None = None,
                      rev: int | None = None, publish: bool | None = None, draft: bool = False) -> Any:
        context: Context = info.context
        body = _as_stored(model, dict(data), models)
        if update:
            body["_id"] = id
        if rev is not None:
            body["_rev"] = rev
        if publish is not None:
            body["_state"] = 1 if publish else 0
        content = context.content
        # a draft beside a published item (a new or unpublished one is
        # written itself, unpublished), as REST's save with ?draft=1
        saved = await (content.save_draft(name, body, context.identity) if draft else
                       content.save(name, body, context.identity))
        depth = _populate(info, info.return_type)
        if not depth:
            return saved
        # the saved item with its links read as a read would (REST's populate)
        return content.transform(content.models.get(name), [saved], ReadOptions(populate=depth), None,
                                 context.identity)[0]
    return resolve


def delete_resolver(name: str) -> Callable[..., Any]:
    async def resolve(source: Any, info: GraphQLResolveInfo, id: str) -> bool:
        context: Context = info.context
        await context.content.delete(name, id, context.identity)
        return True
    return resolve


# -- the fields ------------------------------------------------------------------

def fields(models: list[Model], identity: Identity, taken: set[str]) -> tuple[dict[str, GraphQLField],
                                                                              dict[str, GraphQLField]]:
    """The typed root fields of queries and of mutations for `identity`
    (`taken`: the type names the schema has already)."""
    builder = Builder(models, identity, taken)
    queries: dict[str, GraphQLField] = {}
    mutations: dict[str, GraphQLField] = {}
    for name, model in builder.models.items():
        names = builder.names[name]
        item_type = builder.object(name)
        locale = GraphQLArgument(GraphQLString, description="A locale code; the default language without it")
        if model.type == "singleton":
            queries[names.list] = GraphQLField(
                item_type, {"locale": locale, "draft": GraphQLArgument(GraphQLBoolean, default_value=False),
                            "preview": GraphQLArgument(GraphQLString)},
                one_resolver(name, item_type, singleton=True), description=f"The {name} singleton", extensions=FAST)
        else:
            connection = GraphQLObjectType(builder.new_name(names.type + "Connection"), {
                "items": GraphQLField(GraphQLNonNull(GraphQLList(GraphQLNonNull(item_type)))),
                "total": GraphQLField(GraphQLInt, description="How many items the filter finds (asked: counted)"),
                "next": GraphQLField(GraphQLString, description="The cursor of the next page (as `after`), "
                                                                "null on the last page"),
            })
            queries[names.list] = GraphQLField(connection, {
                "filter": GraphQLArgument(JSON_TYPE), "sort": GraphQLArgument(JSON_TYPE),
                "limit": GraphQLArgument(GraphQLInt, description="Items per page: 100 unless given"),
                "skip": GraphQLArgument(GraphQLInt), "after": GraphQLArgument(GraphQLString), "locale": locale,
            }, list_resolver(name, item_type), description=f"Published items of {name}, a page at a time",
                extensions=FAST)
            queries[names.one] = GraphQLField(
                item_type, {"id": GraphQLArgument(GraphQLNonNull(GraphQLID)), "locale": locale,
                            "draft": GraphQLArgument(GraphQLBoolean, default_value=False),
                            "preview": GraphQLArgument(GraphQLString)},
                one_resolver(name, item_type, singleton=False),
                description=f"One published item of {name} (its draft with draft: true, or with a preview token)",
                extensions=FAST)
            if model.type == "tree":
                queries[names.list + "Tree"] = GraphQLField(
                    GraphQLNonNull(GraphQLList(GraphQLNonNull(item_type))),
                    {"parent": GraphQLArgument(GraphQLID), "locale": locale}, tree_resolver(name, item_type),
                    description=f"The published tree of {name} (from `parent`), each item with its children",
                    extensions=FAST)
            queries[names.count] = GraphQLField(GraphQLNonNull(GraphQLInt), {"filter": GraphQLArgument(JSON_TYPE)},
                                                count_resolver(name), description=f"How many published items of "
                                                                                  f"{name} the filter finds",
                                                extensions=FAST)
        can_write = any(identity.can(f"content/{name}/{a}") for a in ("create", "update"))
        if can_write:
            data = GraphQLArgument(GraphQLNonNull(builder.input(name)))
            extra = {"rev": GraphQLArgument(GraphQLInt, description="The revision the change starts from"),
                     "publish": GraphQLArgument(GraphQLBoolean), "draft": GraphQLArgument(GraphQLBoolean,
                                                                                          default_value=False)}
            if model.type == "singleton":
                mutations["update" + names.type] = GraphQLField(
                    item_type, {"data": data, **extra}, save_resolver(name, model, builder.models, update=False))
            else:
                mutations["create" + names.type] = GraphQLField(
                    item_type, {"data": data, "publish": extra["publish"]},
                    save_resolver(name, model, builder.models, update=False))
                mutations["update" + names.type] = GraphQLField(
                    item_type, {"id": GraphQLArgument(GraphQLNonNull(GraphQLID)), "data": data, **extra},
                    save_resolver(name, model, builder.models, update=True))
        if model.type != "singleton" and identity.can(f"content/{name}/delete"):
            mutations["delete" + names.type] = GraphQLField(
                GraphQLBoolean, {"id": GraphQLArgument(GraphQLNonNull(GraphQLID))}, delete_resolver(name))
    return queries, mutations

