"""The in-process test client: starlette's `TestClient` with a quicker way
to the app.

Starlette's client opens a new event loop in a new thread for every
request and crosses between the two threads for each message of the
exchange; on this code that cost about 4.7 ms a request, against 0.07 ms of
the app's own work, and was most of the suite's time. Here each calling
thread keeps one event loop in a thread of its own for as long as it lives,
and a request crosses over once: the app runs to the end of its answer, and
the caller reads the whole answer back. Requests from different threads run
on different loops, so tests that send concurrent requests from threads
still get them served concurrently, as before.

A client used as a context manager (`with TestClient(app) as c:`) runs the
app's start and stop (lifespan) on starlette's loop; its requests keep
starlette's way, so they run on the loop the app started on."""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any
from urllib.parse import unquote

from starlette import testclient as _starlette

httpx = _starlette.httpx


class _Loop:
    """An event loop running in a daemon thread; stopped and closed when
    the thread that asked for it ends (its thread-local goes away)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="test-client-loop", daemon=True)
        self.thread.start()
        weakref.finalize(self, _stop, self.loop, self.thread)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    if not loop.is_running():
        loop.close()


_local = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    runner = getattr(_local, "runner", None)
    if runner is None:
        runner = _local.runner = _Loop()
    return runner.loop  # type: ignore[no-any-return]


class _Answer:
    """What the app sent, gathered on its loop."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()


class _Transport(_starlette._TestClientTransport):
    def handle_request(self, request: Any) -> Any:
        scheme = request.url.scheme
        if scheme in ("ws", "wss") or self._in_context():
            return super().handle_request(request)
        port = request.url.port or {"http": 80, "https": 443}[scheme]
        headers = [] if "host" in request.headers else [(b"host", request.url.netloc)]
        headers += [(k.lower().encode(), v.encode()) for k, v in request.headers.multi_items()]
        scope = _scope(request.method, request.url.raw_path.split(b"?", 1)[0], request.url.query, headers,
                       client=self.client, server=[request.url.raw_host.decode("ascii"), port],
                       scheme=scheme, root_path=self.root_path, state=self.app_state.copy())
        body = request.read()
        answer = _Answer()
        future = asyncio.run_coroutine_threadsafe(_run(self.app, scope, body, answer), _loop())
        try:
            future.result()
        except Exception:
            if self.raise_server_exceptions:
                raise
            if answer.status is None:  # as starlette's client answers an app that failed
                answer.status, answer.headers = 500, []
                answer.body = bytearray(b"Internal Server Error")
        if answer.status is None:
            raise AssertionError("the app ended without an answer")
        content = b"" if request.method == "HEAD" else bytes(answer.body)
        return httpx.Response(answer.status, headers=answer.headers, stream=httpx.ByteStream(content),
                              request=request)

    def _in_context(self) -> bool:
        """True inside `with TestClient(app)`: the portal of its lifespan is open."""
        owner = getattr(self.portal_factory, "__self__", None)
        return getattr(owner, "portal", None) is not None


def _scope(method: str, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]], *,
           client: Any, server: list[Any], scheme: str = "http", root_path: str = "",
           state: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ASGI scope of one HTTP request, as a server makes it."""
    return {"type": "http", "http_version": "1.1", "method": method, "scheme": scheme,
            "path": unquote(raw_path.decode("latin-1")), "raw_path": raw_path, "root_path": root_path,
            "query_string": query, "headers": headers, "client": client, "server": server,
            "extensions": {"http.response.debug": {}}, "state": state if state is not None else {}}


async def _run(app: Any, scope: dict[str, Any], body: bytes, answer: _Answer) -> None:
    """Run the app on one request; what it answers goes into `answer`."""
    sent = False
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the client stays until the whole answer is read
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            assert answer.status is None, "two http.response.start messages"
            answer.status = message["status"]
            answer.headers = [(k.decode(), v.decode()) for k, v in message.get("headers", [])]
        elif kind == "http.response.body":
            assert answer.status is not None, "a body before http.response.start"
            answer.body += message.get("body", b"")
            if not message.get("more_body", False):
                done.set()

    try:
        await app(scope, receive, send)
    finally:
        done.set()


class TestClient(_starlette.TestClient):
    __test__ = False  # not a test class, for pytest

    def __init__(self, app: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(app, *args, **kwargs)
        old = self._transport
        assert isinstance(old, _starlette._TestClientTransport)
        self._transport = _Transport(old.app, old.portal_factory, old.raise_server_exceptions, old.root_path,
                                     client=old.client, app_state=old.app_state)


class Answer:
    """A whole answer of `call` (status, headers with lower-case names, body)."""

    def __init__(self, status: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        import json

        return json.loads(self.content)


def call(app: Any, method: str, target: str, headers: dict[str, str] | None = None) -> Answer:
    """One request straight to the ASGI app on this thread's loop, without
    an HTTP client: for tests that send thousands of requests (a request
    costs the app's own work and one thread crossing). `target` is a path
    with its query string, already encoded."""
    path, _, query = target.partition("?")
    sent = [(b"host", b"testserver"), *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items())]
    scope = _scope(method, path.encode(), query.encode(), sent, client=("testclient", 50000),
                   server=["testserver", 80])
    answer = _Answer()
    future = asyncio.run_coroutine_threadsafe(_run(app, scope, b"", answer), _loop())
    try:
        future.result()
    except Exception:
        if answer.status is None:
            return Answer(500, {}, b"Internal Server Error")
    assert answer.status is not None
    return Answer(answer.status, {k.lower(): v for k, v in answer.headers}, bytes(answer.body))
