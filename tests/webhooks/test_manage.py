"""Managing webhooks over the API: who may, every field checked with
hostile values (a 400 naming the field, nothing stored), and the address
rules (SSRF) that refuse private and loopback targets before any
connection is made, at save and again at delivery."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from quire.app import Quire
from quire.webhooks.deliver import Policy, Refused, Sender, is_public
from tests.conftest import Api, create_item, put_model, role_key
from tests.webhooks.test_delivery import log_of

GOOD = {"name": "Build", "url": "https://build.example/hooks", "events": ["content.*"]}


def test_only_a_role_with_webhooks_manage_may_see_or_change_webhooks(admin: Api, anon: Api) -> None:
    hook = admin.post("/api/webhooks", json=GOOD).json()
    editor = role_key(admin, "editor", {"content/*/read": True})
    manager = role_key(admin, "hooks", {"webhooks/manage": True})
    paths = [("GET", "/api/webhooks"), ("POST", "/api/webhooks"), ("GET", f"/api/webhooks/{hook['_id']}"),
             ("PUT", f"/api/webhooks/{hook['_id']}"), ("DELETE", f"/api/webhooks/{hook['_id']}"),
             ("POST", f"/api/webhooks/{hook['_id']}/rotate"), ("POST", f"/api/webhooks/{hook['_id']}/enable"),
             ("GET", f"/api/webhooks/{hook['_id']}/deliveries")]
    for method, path in paths:
        assert anon.request(method, path, json=GOOD).status_code == 401, path
        assert editor.request(method, path, json=GOOD).status_code == 403, path
    assert manager.get("/api/webhooks").status_code == 200
    assert "webhooks/manage" in admin.get("/api/openapi.json").text


def test_create_update_delete(admin: Api) -> None:
    created = admin.post("/api/webhooks", json={**GOOD, "models": ["posts"], "headers": {"X-A": "1"}}).json()
    assert created["enabled"] is True and created["failures"] == 0 and created["secret"].startswith("whsec_")
    changed = admin.put(f"/api/webhooks/{created['_id']}", json={"events": ["*"], "enabled": False})
    assert changed.status_code == 200
    assert (changed.json()["events"], changed.json()["enabled"], changed.json()["url"]) == (
        ["*"], False, GOOD["url"])
    assert [h["_id"] for h in admin.get("/api/webhooks").json()] == [created["_id"]]
    assert admin.delete(f"/api/webhooks/{created['_id']}").json() == {"success": True}
    for method in ("GET", "PUT", "DELETE"):
        assert admin.request(method, f"/api/webhooks/{created['_id']}", json={}).status_code == 404
    assert admin.get("/api/webhooks/not-an-id").status_code == 404


HOSTILE: list[tuple[str, Any]] = [
    ("name", ""), ("name", "x" * 101), ("name", "a\nb"), ("name", 5), ("name", None),
    ("url", "ftp://build.example/"), ("url", "javascript:alert(1)"), ("url", "file:///etc/passwd"),
    ("url", "http://user:pass@build.example/"), ("url", "http://build.example:99999/"),
    ("url", "http://build.example:0/"), ("url", "http://build.example/a\r\nX-Injected: 1"),
    ("url", "https://bücher.example/"), ("url", "https://" + "a" * 2050 + ".example/"), ("url", "//build.example/"),
    ("url", "http:///nohost"), ("url", "http://build.example/#frag"), ("url", "http://exa mple.com/"),
    ("url", "http://10.0.0.1/"), ("url", "http://[::1]/"), ("url", "http://169.254.169.254/latest/meta-data"),
    ("url", "http://[::ffff:127.0.0.2]/"), ("url", "http://0.0.0.0/"),
    ("url", "http://127.0.0.2/"), ("url", "http://224.0.0.1/"), ("url", ["http://a.example/"]),
    ("events", []), ("events", "content.*"), ("events", ["Content.Item"]), ("events", ["a b"]),
    ("events", ["x" * 101]), ("events", [1]), ("events", ["é.saved"]), ("events", ["*"] * 51 + ["a.b"] * 0 + [
        f"e{n}" for n in range(51)]),
    ("models", "posts"), ("models", ["bad name"]), ("models", [None]), ("models", ["x" * 65]),
    ("headers", []), ("headers", {"X-A": "a\r\nX-B: b"}), ("headers", {"X-A": "a\nb"}), ("headers", {"Bad Name": "1"}),
    ("headers", {"Host": "evil.example"}), ("headers", {"Webhook-Signature": "v1,forged"}),
    ("headers", {"Transfer-Encoding": "chunked"}), ("headers", {"Connection": "close"}),
    ("headers", {"Content-Length": "1"}), ("headers", {"X-A": "x" * 1025}), ("headers", {"X-A": 1}),
    ("headers", {"X-A": "café"}), ("headers", {f"X-{n}": "1" for n in range(21)}),
    ("headers", {"X-A": "1", "x-a": "2"}), ("headers", {"Proxy-Authorization": "Basic x"}),
    ("enabled", "yes"), ("enabled", 1),
]


def test_a_hostile_field_is_refused_by_name_and_nothing_stored(admin: Api) -> None:
    # one site for every value (a site per value cost the suite more than the checks)
    for field, value in HOSTILE:
        response = admin.post("/api/webhooks", json={**GOOD, field: value})
        assert response.status_code == 400, (field, value, response.text)
        assert response.json()["fields"] == [field] and field in response.json()["error"], (field, value)
    assert admin.get("/api/webhooks").json() == []


def test_localhost_is_refused_at_save_unless_its_address_is_allowed() -> None:
    from quire.webhooks.checks import check_url
    for url in ("http://localhost:8080/", "http://LOCALHOST/", "http://app.localhost/", "http://localhost./"):
        with pytest.raises(ValueError, match="refused"):
            check_url(url, Policy.of(False, ()))
    assert check_url("http://localhost:8080/", Policy.of(False, ("127.0.0.1",))) == "http://localhost:8080/"


def test_unknown_fields_bodies_and_missing_ones_are_400(admin: Api) -> None:
    for body, fields in (({**GOOD, "secret": "whsec_mine"}, ["secret"]), ({"name": "x"}, ["events", "url"])):
        response = admin.post("/api/webhooks", json=body)
        assert response.status_code == 400 and response.json()["fields"] == fields, response.text
    for raw in (b"[]", b'"x"', b"{bad", b"null"):
        response = admin.post("/api/webhooks", content=raw, headers={"content-type": "application/json"})
        assert response.status_code == 400, raw
    hook = admin.post("/api/webhooks", json=GOOD).json()
    assert admin.put(f"/api/webhooks/{hook['_id']}", json={"url": "gopher://x/"}).status_code == 400
    assert admin.get(f"/api/webhooks/{hook['_id']}").json()["url"] == GOOD["url"]
    assert admin.get(f"/api/webhooks/{hook['_id']}/deliveries", params={"limit": 0}).status_code == 400


@pytest.mark.parametrize("address", ["10.1.2.3", "172.16.0.1", "192.168.1.1", "127.0.0.1", "169.254.169.254",
                                     "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::",
                                     "fe80::1", "fc00::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "2002:a00:1::1",
                                     "64:ff9b::a00:1", "ff02::1"])
def test_non_public_addresses_are_not_public(address: str) -> None:
    import ipaddress
    assert not is_public(ipaddress.ip_address(address))


def test_public_addresses_are() -> None:
    import ipaddress
    assert all(is_public(ipaddress.ip_address(a)) for a in ("93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"))


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every socket connect in the process is recorded and refused."""
    tried: list[Any] = []

    def connect(self: socket.socket, address: Any) -> None:
        tried.append(address)
        raise ConnectionRefusedError("connections are off in this test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect)
    yield tried


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/", "http://10.0.0.1/", "http://[::1]:9/",
                                 "http://169.254.169.254/latest/meta-data", "http://localhost:9/",
                                 "http://[::ffff:127.0.0.1]:9/"])
def test_the_sender_refuses_before_connecting(url: str, no_connections: list[Any]) -> None:
    sender = Sender(Policy.of(False, ()), 2.0)
    try:
        with pytest.raises(Refused):
            sender.post(url, {}, b"{}")
    finally:
        sender.close()
    assert no_connections == []


def test_a_host_name_resolving_to_a_private_address_is_refused_at_delivery_before_any_connection(
        admin: Api, quire: Quire, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name that passed the save (not an address) but resolves to a
    loopback address that is not allowed: the runner refuses it without
    connecting (a listener there accepts nothing), logs it and gives up."""
    listener = socket.create_server(("127.0.0.2", 0))
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    accepted: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebind.example":
            return real("127.0.0.2", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    try:
        put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
        hook = admin.post("/api/webhooks", json={**GOOD, "url": f"http://rebind.example:{port}/"}).json()
        create_item(admin, "posts", {"title": "x"})
        logged = log_of(admin, hook["_id"], 1)
        assert len(logged) == 1 and logged[0]["status"] is None and "may not call" in logged[0]["error"]
        # the job's outcome commits after the log line: waited for, not 0.1 s
        deadline = time.monotonic() + 30
        while True:
            jobs = quire.store.collection("system/jobs").find({"kind": "webhook.delivery"})
            if not any(j["state"] in ("pending", "running") for j in jobs):
                break
            assert time.monotonic() < deadline, jobs
            time.sleep(0.02)
        assert [(j["state"], j["attempts"]) for j in jobs] == [("failed", 1)]  # no retries
        assert accepted == []
    finally:
        stop.set()
        thread.join()
        listener.close()
