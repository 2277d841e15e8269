"""GraphQL at `/api/gql`: Cockpit's schema (the `content` and
`<name>Model` root fields, its two mutations), over the same read and
write paths as REST (docs/graphql.md)."""

from __future__ import annotations

from pathlib import Path

from quire.content.models import ModelService
from quire.gql import openapi, routes, screens
from quire.gql.persisted import PersistedQueries
from quire.gql.service import GqlService
from quire.modules import Module, NavEntry, Services


def build(services: Services) -> None:
    settings = services.settings.graphql
    services.add("gql", GqlService(services, services.get(ModelService), services.cache, settings))
    services.add("gql_queries", PersistedQueries(services.store, services.cache, settings.persisted_queries))


HERE = Path(__file__).parent

module = Module("gql", build=build, routes=[*routes.routes, *screens.routes], openapi=openapi.paths,
                templates=HERE / "templates", static=HERE / "static",
                nav=[NavEntry("GraphQL playground", screens.PAGE, "Settings",
                              lambda identity: identity.can("system/manage"), order=91)])
