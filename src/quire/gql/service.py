"""Running GraphQL documents: the schema a role sees (made from the
models when first asked, again after any change of models or roles, on
every worker and instance: it is kept as system data), documents parsed
once and kept, the request's limits, and errors as GraphQL words them."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLObjectType,
    GraphQLSchema,
    MaxIntrospectionDepthRule,
    NoSchemaIntrospectionCustomRule,
    OperationDefinitionNode,
    OperationType,
    execute,
    get_operation_ast,
    parse,
    specified_rules,
    validate,
)

from quire.auth.service import Identity
from quire.cache import Cache, SystemValue
from quire.config import GraphqlSettings
from quire.content.models import ModelService
from quire.errors import ApiError, Unavailable
from quire.gql import cockpit, site, typed
from quire.gql.fast import Fallback, Plan
from quire.gql.limits import Limits, TooMuch, check_cost, check_shape
from quire.modules import Services
from quire.persona.request import Persona

log = logging.getLogger("quire.gql")

DOCUMENTS_KEPT = 4 * 1024 * 1024  # bytes of query text whose parsed documents are kept


@dataclass
class Answer:
    """What to send: the status and the GraphQL response."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class Refused(Exception):
    """A document that cannot run: the status and the errors to send."""

    def __init__(self, status: int, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors[0]["message"] if errors else "refused")
        self.status = status
        self.errors = errors


class GqlService:
    def __init__(self, services: Services, models: ModelService, cache: Cache, settings: GraphqlSettings) -> None:
        self.services = services
        self.models = models
        self.settings = settings
        self.limits = Limits(settings.max_depth, settings.max_aliases, settings.max_cost)
        # role -> schema, for the stored system data (models, roles)
        self._schemas: SystemValue[dict[Hashable, GraphQLSchema]] = cache.system(dict)
        self._documents = cache.memo("gql.documents", DOCUMENTS_KEPT)
        self._valid = cache.memo("gql.valid", DOCUMENTS_KEPT)  # (schema, query) pairs that passed validation
        self._plans = cache.memo("gql.plans", DOCUMENTS_KEPT)  # fast.Plan (or False) per schema and query

    # -- the schema -------------------------------------------------------

    def schema(self, identity: Identity) -> GraphQLSchema:
        """What `identity`'s role sees: the root fields of the models it may
        read (Cockpit's schema, filtered by the role)."""
        schemas: dict[Hashable, GraphQLSchema] = self._schemas.get()
        key = (identity.role, identity.permissions)
        found = schemas.get(key)
        if found is None:
            found = schemas[key] = self._build(identity)
        return found

    def _build(self, identity: Identity) -> GraphQLSchema:
        """Cockpit's fields first (their names are the contract), then the
        site's, then the typed ones (a typed name another has already gets
        `Content` after it: a model `pages` has `pagesContent`)."""
        models = self.models.all()
        names = cockpit.TypeNames()
        queries = {**cockpit.query_fields(models, identity, names), **site.query_fields(identity)}
        mutations = cockpit.mutation_fields()
        typed_queries, typed_mutations = typed.fields(models, identity, names.taken)
        for into, more in ((queries, typed_queries), (mutations, typed_mutations)):
            for name, root in more.items():
                into[name if name not in into else name + "Content"] = root
        return GraphQLSchema(GraphQLObjectType("Query", queries), GraphQLObjectType("Mutation", mutations))

    # -- a request --------------------------------------------------------

    def document(self, query: str) -> DocumentNode:
        """The parsed document of `query`, kept by its text; a syntax
        error, or more tokens than allowed, is refused."""
        found: DocumentNode | None = self._documents.get(query)
        if found is not None:
            return found
        try:
            document = parse(query, max_tokens=self.settings.max_tokens, no_location=False)
        except GraphQLError as exc:
            raise Refused(400, [dict(exc.formatted)]) from None
        try:
            check_shape(document, self.limits)
        except TooMuch as exc:
            raise Refused(400, [{"message": str(exc), "extensions": {"code": "QUERY_TOO_LARGE"}}]) from None
        self._documents.put(query, document, len(query) + 200)
        return document

    async def run(self, query: str, variables: dict[str, Any], operation_name: str | None, identity: Identity,
                  method: str, persona: Persona | None = None) -> Answer:
        document = self.document(query)
        schema = self.schema(identity)
        # a document valid for a schema stays so: validated once per pair
        # (the engine's validation costs more than running a small query)
        key = (schema, query)
        if self._valid.get(key) is None:
            rules = list(specified_rules) + [MaxIntrospectionDepthRule]
            if not self.settings.introspection:
                rules.append(NoSchemaIntrospectionCustomRule)
            errors = validate(schema, document, rules, max_errors=20)
            if errors:
                raise Refused(400, [dict(e.formatted) for e in errors])
            self._valid.put(key, True, len(query) + 100)
        operation = get_operation_ast(document, operation_name)
        if operation is None:
            message = (f"Unknown operation named {operation_name!r}" if operation_name else
                       "The document has several operations: name the one to run with operationName")
            raise Refused(400, [{"message": message}])
        if operation.operation == OperationType.MUTATION and method in ("GET", "HEAD"):
            raise Refused(405, [{"message": "A mutation is sent with POST, not GET"}])
        # without variables the cost is the document's own: checked once
        # (it passed, or the query was refused), kept with its validation
        fixed = not operation.variable_definitions
        if not (fixed and self._valid.get((schema, query, operation_name)) is not None):
            try:
                check_cost(schema, document, operation, variables, self.limits)
            except TooMuch as exc:
                raise Refused(400, [{"message": str(exc), "extensions": {"code": "QUERY_TOO_COSTLY"}}]) from None
            if fixed:
                self._valid.put((schema, query, operation_name), True, len(query) + 100)
        context = cockpit.Context(self.services, identity, self.settings.max_items, persona)
        plan_key = (schema, query, operation_name)
        plan = self._plans.get(plan_key)
        if plan is None:
            fragments = any(isinstance(d, FragmentDefinitionNode) for d in document.definitions)
            plan = Plan.make(schema, operation, fragments) or False
            self._plans.put(plan_key, plan, len(query) + 100)
        if plan:
            try:
                return Answer(200, {"data": plan.run(schema, context, variables)})
            except Fallback:
                pass  # the executor answers it, errors and all
        result = execute(schema, document, variable_values=variables, operation_name=operation_name,
                         context_value=context)
        if not isinstance(result, ExecutionResult):
            result = await result
        return self._answer(result, operation)

    def _answer(self, result: ExecutionResult, operation: OperationDefinitionNode) -> Answer:
        body: dict[str, Any] = {}
        status, headers = 200, {}
        if result.errors:
            formatted = []
            for error in result.errors:
                original = error.original_error
                if isinstance(original, Unavailable):
                    # the database is busy or away: the whole answer says so
                    status = 503
                    headers["Retry-After"] = str(original.extra.get("retry_after") or 1)
                formatted.append(_formatted(error))
            body["errors"] = formatted
        if result.data is not None or not result.errors:
            body["data"] = result.data
        return Answer(status, body, headers)


def _formatted(error: GraphQLError) -> dict[str, Any]:
    """An error as the response lists it: a refusal of the service (a bad
    argument, a permission) with its message and status; anything else
    unexpected as "Internal server error", logged with its traceback."""
    out: dict[str, Any] = dict(error.formatted)
    original = error.original_error
    if isinstance(original, ApiError):
        out["message"] = original.message
        out["extensions"] = {**(out.get("extensions") or {}), "code": _code(original), "status": original.status}
    elif original is not None and not isinstance(original, GraphQLError):
        log.error("gql: a resolver failed at %s", ".".join(map(str, error.path or [])), exc_info=original)
        out["message"] = "Internal server error"
    return out


CODES = {400: "BAD_REQUEST", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED",
         409: "CONFLICT", 412: "PRECONDITION_FAILED", 413: "TOO_LARGE", 429: "TOO_MANY_REQUESTS",
         503: "UNAVAILABLE"}


def _code(error: ApiError) -> str:
    return CODES.get(error.status, "ERROR")


def query_hash(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()
