"""The MCP server with the SDK's own client over Streamable HTTP (in this
process) and stdio (`quire mcp`): tools, resources and prompts, and the
safety rules: every write a draft with a revision, an audit entry naming
the assistant and a preview link; no publishing, whatever the role,
unless an admin allowed it for the key; writes bounded."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quire.audit.service import AuditQuery, AuditService
from quire.revisions.service import RevisionService
from tests.assistants.conftest import ToolRefused, answer, mcp_client
from tests.conftest import Api, create_item, put_model, role_key

pytestmark = pytest.mark.anyio


def _posts(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text", "required": True}, {"name": "body", "type": "wysiwyg"}],
        preview=[{"name": "site", "uri": "https://site.example/preview/{id}?token={token}"}])


async def test_an_assistant_reads_and_writes_drafts_only(app: Any, admin: Api, admin_key: str) -> None:
    _posts(admin)
    live = create_item(admin, "posts", {"title": "Live post", "body": "<p>As published</p>"})
    quire = app.state.quire
    async with mcp_client(app, admin_key, client="claude-desktop") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"list_models", "get_model", "find_items", "get_item", "create_item", "update_item", "save_drafts",
                "preview_link", "publish_item", "list_pages", "get_page", "list_assets", "get_asset",
                "upload_asset", "get_translations"} <= names
        models = answer(await client.call_tool("list_models", {}))["models"]
        assert [m["name"] for m in models] == ["posts"]
        assert models[0]["fields"][0] == {"name": "title", "type": "text", "label": "title", "required": True}

        made = answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "By the bot"}}))
        saved = made["saved"][0]
        assert saved["state"] == "draft" and saved["item"]["_state"] == 0 and saved["rev"] == 1
        assert saved["preview"]["links"][0]["url"].startswith(f"https://site.example/preview/{saved['_id']}?token=")
        assert saved["studio"] == f"/studio/content/posts/item/{saved['_id']}"

        changed = answer(await client.call_tool("update_item", {"model": "posts", "id": live["_id"],
                                                                "data": {"title": "Rewritten by the bot"}}))
        assert changed["saved"][0]["item"]["_draft"] is True
        found = answer(await client.call_tool("find_items", {"model": "posts", "drafts": True}))
        assert found["total"] is not None and len(found["items"]) == 2
        read = answer(await client.call_tool("get_item", {"model": "posts", "id": live["_id"]}))
        assert read["draft"] is True and read["item"]["title"] == "Rewritten by the bot"

    # nothing live changed: the public list holds the live post as it was
    public = admin.get("/api/content/items/posts").json()
    assert [p["title"] for p in public] == ["Live post"]
    # a revision of the new item, and audit entries naming the assistant
    history, total = quire.get(RevisionService).history("content/posts", saved["_id"])
    assert total == 1
    entries, _ = quire.get(AuditService).find(AuditQuery(resource="content/posts"))
    by_bot = [e for e in entries if "via MCP" in str(e["who"].get("name"))]
    assert {e["action"] for e in by_bot} >= {"item.create", "item.draft"}
    assert all(e["who"]["name"] == "test admin via MCP (claude-desktop)" for e in by_bot), by_bot[0]["who"]


async def test_no_role_lets_an_assistant_publish_unless_an_admin_allows_the_key(app: Any, admin: Api,
                                                                                  admin_key: str) -> None:
    _posts(admin)
    draft_id = ""
    async with mcp_client(app, admin_key) as client:
        with pytest.raises(ToolRefused, match="would make it live"):
            answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "x", "_state": 1}}))
        with pytest.raises(ToolRefused, match="would make it live"):
            answer(await client.call_tool("save_drafts", {"model": "posts", "items": [
                {"title": "later", "_publish_at": 2_000_000_000}]}))
        draft_id = answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "x"}}))[
            "saved"][0]["_id"]
        with pytest.raises(ToolRefused, match="may not publish with this key"):
            answer(await client.call_tool("publish_item", {"model": "posts", "id": draft_id}))
    assert admin.get("/api/content/items/posts").json() == []

    key_id = next(k["_id"] for k in admin.get("/api/system/keys").json() if k["name"] == "test admin")
    manager = role_key(admin, "manager", {"system/manage": True})
    assert manager.request("PATCH", f"/api/system/keys/{key_id}", json={"mcp_publish": True}).status_code == 403
    assert admin.request("PATCH", f"/api/system/keys/{key_id}", json={"mcp_publish": "yes"}).status_code == 400
    allowed = admin.request("PATCH", f"/api/system/keys/{key_id}", json={"mcp_publish": True})
    assert allowed.status_code == 200 and allowed.json()["mcp_publish"] is True
    async with mcp_client(app, admin_key) as client:
        published = answer(await client.call_tool("publish_item", {"model": "posts", "id": draft_id}))
        assert published["_state"] == 1
    assert [p["title"] for p in admin.get("/api/content/items/posts").json()] == ["x"]


async def test_an_assistant_has_only_its_keys_role(app: Any, admin: Api) -> None:
    _posts(admin)
    put_model(admin, "secrets", type="collection", fields=[{"name": "code", "type": "text"}])
    reader = role_key(admin, "reader", {"content/posts/read": True})
    async with mcp_client(app, reader.key) as client:
        assert [m["name"] for m in answer(await client.call_tool("list_models", {}))["models"]] == ["posts"]
        with pytest.raises(ToolRefused, match="Permission denied"):
            answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "no"}}))
        with pytest.raises(ToolRefused):
            answer(await client.call_tool("find_items", {"model": "secrets"}))


async def test_writes_are_bounded_per_call_and_per_minute(app: Any, admin: Api, admin_key: str, data_dir: Path,
                                                          app_env: dict[str, str]) -> None:
    from quire.app import build_app
    from quire.config import load_settings

    limited = build_app(load_settings(data_dir, env={**app_env, "QUIRE_ASSISTANTS_WRITES_PER_MINUTE": "2",
                                                     "QUIRE_ASSISTANTS_MAX_ITEMS_PER_CALL": "3",
                                                     "QUIRE_API_MAX_BODY_BYTES": "100000"}))
    try:
        _posts(admin)
        async with mcp_client(limited, admin_key) as client:
            with pytest.raises(ToolRefused, match="larger than the API takes"):
                answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "a" * 200_000}}))
            with pytest.raises(ToolRefused, match="At most 3 items per call"):
                answer(await client.call_tool("save_drafts", {"model": "posts", "items": [{"title": "t"}] * 4}))
            both = answer(await client.call_tool("save_drafts", {"model": "posts", "items": [
                {"title": "one"}, {"title": 5}]}))
            assert both["saved"][0]["state"] == "draft"
            assert "title" in both["saved"][1]["error"], both  # refused alone, with its reason
            answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "two"}}))
            with pytest.raises(ToolRefused, match="Too many writes"):
                answer(await client.call_tool("create_item", {"model": "posts", "data": {"title": "three"}}))
    finally:
        limited.state.quire.close()


async def test_resources_and_prompts(app: Any, admin: Api, admin_key: str) -> None:
    _posts(admin)
    async with mcp_client(app, admin_key) as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["quire://models/{name}"]
        model = await client.read_resource("quire://models/posts")
        assert '"title"' in model.contents[0].text and model.contents[0].mime_type == "application/json"
        listed = await client.read_resource("quire://models")
        assert '"posts"' in listed.contents[0].text
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert prompts == {"draft_item", "translate_item", "review_item"}
        prompt = await client.get_prompt("translate_item", {"model": "posts", "id": "abc", "locale": "de"})
        assert "title_de" not in prompt.messages[0].content.text and "`<name>_de`" in prompt.messages[0].content.text


async def test_hostile_arguments_are_tool_errors_never_failures(app: Any, admin: Api, admin_key: str) -> None:
    _posts(admin)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("find_items", {"model": "posts", "filter": {"$where": "1"}}),
        ("find_items", {"model": "posts", "limit": 10_000}),
        ("find_items", {"model": "posts\x00"}),
        ("find_items", {"model": "../system"}),
        ("find_items", {"model": "posts", "search": "anything"}),
        ("get_item", {"model": "posts", "id": "x" * 5000}),
        ("create_item", {"model": "posts", "data": {"title": {"$gt": ""}}}),
        ("save_drafts", {"model": "posts", "items": ["not an object"]}),
        ("save_drafts", {"model": "posts", "items": []}),
        ("update_item", {"model": "posts", "id": "nope", "data": {"title": "x"}}),
        ("upload_asset", {"filename": "a.png", "content_base64": "%%%not base64"}),
        ("upload_asset", {"filename": "run.exe", "content_base64": "TVqQAAMAAAAEAAAA"}),
        ("get_page", {}),
        ("get_translations", {"project": "nope"}),
        ("preview_link", {"model": "posts", "id": "nope"}),
        ("nosuchtool", {}),
    ]
    async with mcp_client(app, admin_key) as client:
        # a pattern that backtracks for ever elsewhere: answered (RE2 runs in linear time)
        found = answer(await client.call_tool("find_items", {"model": "posts", "filter": {
            "title": {"$regex": "(a+)+$"}}, "limit": 50}))
        assert found["items"] == []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments)
            text = result.content[0].text
            assert "Error executing tool" not in text or ":" in text.partition("Error executing tool")[2], text
    assert admin.get("/api/content/items/posts").json() == []


async def test_without_a_key_or_from_a_foreign_page_it_is_refused(app: Any, admin_key: str, data_dir: Path,
                                                                  app_env: dict[str, str]) -> None:
    import httpx2

    from quire.app import build_app
    from quire.config import load_settings

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://testserver") as http:
        anonymous = await http.post("/mcp", json=body, headers={"accept": "application/json, text/event-stream"})
        assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
        unknown = await http.post("/mcp", json=body, headers={"api-key": "qk_nope"})
        assert unknown.status_code == 401 and "www-authenticate" in unknown.headers
        garbage = await http.post("/mcp", content=b"{not json", headers={
            "api-key": admin_key, "content-type": "application/json", "accept": "application/json, text/event-stream"})
        assert 400 <= garbage.status_code < 500
        bearer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={
            "authorization": f"Bearer {admin_key}", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18"})
        assert bearer.status_code == 200, bearer.text

    # a page of another site than the API allows (`[api] cors_origins`): refused (DNS rebinding)
    strict = build_app(load_settings(data_dir, env={**app_env, "QUIRE_API_CORS_ORIGINS": "https://site.example"}))
    try:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=strict), base_url="http://testserver") as http:
            headers = {"api-key": admin_key, "accept": "application/json, text/event-stream",
                       "mcp-protocol-version": "2025-06-18"}
            ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
            foreign = await http.post("/mcp", json=ping, headers={**headers, "origin": "https://evil.example"})
            assert foreign.status_code == 403
            allowed = await http.post("/mcp", json=ping, headers={**headers, "origin": "https://site.example"})
            assert allowed.status_code == 200, allowed.text
    finally:
        strict.state.quire.close()


def test_stdio_through_quire_mcp(tmp_path: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    from quire.app import build_app
    from quire.config import load_settings
    from tests.client import TestClient
    from tests.commands import run_quire

    data = tmp_path / "data"
    key = run_quire("keys", "create", "--name", "desktop assistant", "--role", "admin",
                    "--data", str(data)).stdout.split()[-1]
    site = build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        made = TestClient(site).put("/api/system/models/notes", headers={"api-key": key}, json={
            "name": "notes", "type": "collection", "fields": [{"name": "text", "type": "text"}]})
        assert made.status_code == 200, made.text
    finally:
        site.state.quire.close()

    async def session() -> tuple[list[str], dict[str, Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "quire", "mcp", "--data", str(data)],
                                       env={"QUIRE_API_KEY": key, "PYTHONPATH": str(Path.cwd() / "src"),
                                            "QUIRE_SERVER_QUIET": "true"})
        async with Client(params) as client:
            models = answer(await client.call_tool("list_models", {}))["models"]
            made = answer(await client.call_tool("create_item", {"model": "notes", "data": {"text": "from stdio"}}))
            return [m["name"] for m in models], made["saved"][0]

    names, saved = anyio.run(session)
    assert names == ["notes"] and saved["state"] == "draft"
    site = build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        public = TestClient(site).get("/api/content/items/notes", headers={"api-key": key}).json()
        assert public == []  # a draft: not in the published list
    finally:
        site.state.quire.close()


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                max_size=4), max_leaves=12)
TOOLS = ["list_models", "get_model", "find_items", "get_item", "create_item", "update_item", "save_drafts",
         "preview_link", "publish_item", "list_pages", "get_page", "list_assets", "get_asset", "upload_asset",
         "get_translations"]
NAMES = st.sampled_from(["model", "id", "data", "items", "filter", "sort", "limit", "skip", "locale", "search",
                         "drafts", "route", "project", "filename", "content_base64", "title", "alt", "name"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(TOOLS), arguments=st.dictionaries(NAMES, JSON | st.just("posts"), max_size=5))
def test_any_arguments_to_any_tool_are_answered(app: Any, admin_key: str, tool: str,
                                                arguments: dict[str, Any]) -> None:
    """Hostile arguments of any shape: every call is answered, as data or
    as a tool error that names the problem, never a protocol failure."""
    import anyio

    async def call() -> Any:
        async with mcp_client(app, admin_key) as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(call)
    assert result.content, (tool, arguments)
    if result.is_error:
        text = result.content[0].text
        assert text.strip() and text != f"Error executing tool {tool}", (tool, arguments, text)


def test_an_admin_lets_assistants_publish_with_a_key_on_the_keys_screen(app: Any, admin: Api) -> None:
    from tests.admin.conftest import csrf_of, logged_in

    key = admin.post("/api/system/keys", json={"name": "claude", "role": "admin"}).json()
    ann = logged_in(app)
    page = ann.get("/admin/keys").text
    assert "Allow assistants to publish with claude" in page
    allowed = ann.post("/admin/keys", data={"csrf": csrf_of(page), "action": "assistants-publish", "id": key["_id"],
                                            "allow": "1"})
    assert allowed.status_code == 200 and "Forbid assistants to publish with claude" in allowed.text
    assert app.state.quire.auth.assistants_publish(key["_id"]) is True


async def test_a_space_has_its_own_mcp_with_its_own_keys(tmp_path: Path) -> None:
    from quire.app import build_app
    from quire.config import load_settings
    from quire.served import serve_sites
    from tests.client import TestClient

    sites = serve_sites(build_app(load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "1"})))
    try:
        main_key = sites.state.quire.auth.create_key("main", "admin")["key"]
        client = TestClient(sites)
        assert client.post("/api/system/spaces", headers={"api-key": main_key}, json={"name": "shop"}).status_code == 200
        shop_key = client.post("/api/system/spaces/shop/keys", headers={"api-key": main_key},
                               json={"name": "assistant", "role": "admin"}).json()["key"]
        made = client.put("/shop/api/system/models/products", headers={"api-key": shop_key}, json={
            "name": "products", "type": "collection", "fields": [{"name": "name", "type": "text"}]})
        assert made.status_code == 200
        async with mcp_client(sites, shop_key, path="/shop/mcp") as mcp:
            assert [m["name"] for m in answer(await mcp.call_tool("list_models", {}))["models"]] == ["products"]
            saved = answer(await mcp.call_tool("create_item", {"model": "products", "data": {"name": "Kettle"}}))
            assert saved["saved"][0]["studio"].startswith("/shop/studio/content/products/item/")
        with pytest.raises(ExceptionGroup):  # the main site's key is unknown to the space: 401
            async with mcp_client(sites, main_key, path="/shop/mcp") as mcp:
                await mcp.call_tool("list_models", {})
    finally:
        sites.state.quire.close()
