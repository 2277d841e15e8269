"""The GraphQL playground: GraphiQL on the logged-in user's own schema
(its role's), at /system/api/graphql beside the REST playground; its
queries go to /system/api/gql with the session (and its CSRF token), so
no API key is pasted."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.errors import ApiError, Forbidden
from quire.gql.request import read_operation
from quire.gql.routes import answer
from quire.http import json_response, quire_of
from quire.ui.screens import render, studio_page
from quire.ui.web import Login, current_login, same_origin, same_token

PAGE = "/system/api/graphql"
EXAMPLE = """# Your role's schema: press Ctrl+Space for what you may ask, or open the docs.
{
  __schema { queryType { fields { name description } } }
}
"""


@studio_page
async def playground(request: Request, login: Login) -> Response:
    return render(request, login, "gql/graphiql.html", example=EXAMPLE)


async def session_query(request: Request) -> Response:
    """A query of the playground: as the logged-in user, whose session's
    CSRF token comes in `x-csrf-token` from a page of this site."""
    login = await current_login(request)
    if login is None:
        return json_response({"errors": [{"message": "Log in to use the playground"}],
                              "error": "Log in to use the playground"}, 401)
    if not same_origin(request) or not same_token(login.session["csrf"], request.headers.get("x-csrf-token", "")):
        error = Forbidden("The page has expired or did not come from this site; reload it")
        return json_response({"errors": [{"message": error.message}], "error": error.message}, 403)
    quire = quire_of(request)
    try:
        operation = await read_operation(request, quire.max_body, quire.max_depth,
                                         quire.settings.graphql.max_query_bytes)
    except ApiError as exc:
        return json_response({"errors": [{"message": exc.message}], "error": exc.message}, exc.status)
    return await answer(request, operation, login.identity)


routes = [
    route(PAGE, get=playground, cors=False),
    route("/system/api/gql", post=session_query, cors=False),
]
