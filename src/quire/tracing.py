"""OpenTelemetry traces (docs/operations.md#traces), an optional extra
(`pip install 'quire[traces]'`): spans for each request, the store's
reads and write transactions, template renders, jobs and outbound webhook
requests, exported over OTLP/HTTP to `[traces] endpoint`.

Off (the default, or the extra not installed) every `span()` is one test
of a module variable and a shared no-op context: the hot path pays
nothing to speak of. A request's span continues the caller's trace when it
sends a W3C `traceparent`; a webhook delivery carries its own onward, and
its job's span links back to the request that queued it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Any

log = logging.getLogger("quire.tracing")

_tracer: Any = None  # an opentelemetry Tracer once configured
_provider: Any = None
NOTHING = contextlib.nullcontext()  # what span() is when traces are off


def enabled() -> bool:
    return _tracer is not None


def configure(endpoint: str, service: str, sample_ratio: float, exporter: Any = None) -> bool:
    """Start exporting spans to the OTLP/HTTP `endpoint` (or to `exporter`,
    the tests' in-memory one). False, with a log line, when the extra is
    not installed."""
    global _tracer, _provider
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
    except ImportError:
        log.warning("[traces] is on but OpenTelemetry is not installed: pip install 'quire[traces]'")
        return False
    shutdown()
    provider = TracerProvider(resource=Resource.create({"service.name": service}),
                              sampler=ParentBased(TraceIdRatioBased(sample_ratio)))
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _provider = provider
    _tracer = provider.get_tracer("quire")
    return True


def shutdown() -> None:
    """Send what is left and stop (a worker ending)."""
    global _tracer, _provider
    if _provider is not None:
        with contextlib.suppress(Exception):
            _provider.shutdown()
    _tracer = _provider = None


def span(name: str, attributes: Mapping[str, Any] | None = None, kind: str = "internal") -> Any:
    """A span around a block (a no-op when traces are off)."""
    if _tracer is None:
        return NOTHING
    return _span(name, attributes, kind)


@contextlib.contextmanager
def _span(name: str, attributes: Mapping[str, Any] | None, kind: str) -> Iterator[Any]:
    from opentelemetry.trace import SpanKind

    with _tracer.start_as_current_span(name, kind=getattr(SpanKind, kind.upper()),
                                       attributes=dict(attributes or {})) as current:
        yield current


def request_span(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Any:
    """The server span of a request, a child of the caller's `traceparent`."""
    if _tracer is None:
        return NOTHING
    return _request_span(method, path, headers)


@contextlib.contextmanager
def _request_span(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Iterator[Any]:
    from opentelemetry import context as otel_context
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers if k in (b"traceparent", b"tracestate")}
    token = otel_context.attach(extract(carrier)) if carrier else None
    try:
        # the path only: a query string may carry a key
        with _tracer.start_as_current_span(f"{method} {path}", kind=SpanKind.SERVER, attributes={
                "http.request.method": method, "url.path": path}) as current:
            yield current
    finally:
        if token is not None:
            otel_context.detach(token)


def annotate(attributes: Mapping[str, Any]) -> None:
    """Add `attributes` to the current span (a request's status, say)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(dict(attributes))


def carrier() -> dict[str, str]:
    """The current trace as W3C headers (`traceparent`), for a request sent
    onward or a job queued now; empty when traces are off."""
    if _tracer is None:
        return {}
    from opentelemetry.propagate import inject

    found: dict[str, str] = {}
    inject(found)
    return found


def job_span(kind: str, queued_by: Mapping[str, str] | None) -> Any:
    """A job's span: a trace of its own, linked to the request that queued it."""
    if _tracer is None:
        return NOTHING
    links = []
    if queued_by:
        from opentelemetry import trace
        from opentelemetry.propagate import extract

        parent = trace.get_current_span(extract(dict(queued_by))).get_span_context()
        if parent.is_valid:
            links.append(trace.Link(parent))
    return _tracer.start_as_current_span(f"job {kind}", links=links, attributes={"quire.job.kind": kind})
