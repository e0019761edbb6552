"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the tests (stdlib ``http.server`` in a thread).

It takes ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` in protobuf (gzip or not), as
the OpenTelemetry SDK's OTLP/HTTP exporter sends it, decodes it with the message classes of
``opentelemetry-proto`` and keeps every span as a ``ReceivedSpan``; it answers with an empty
``ExportTraceServiceResponse``. ``wait_spans`` blocks until enough spans arrived (tests wait on
facts, not on time).
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.providers_server import LoopbackServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # isort: skip
from opentelemetry.proto.common.v1 import common_pb2  # isort: skip


@dataclass
class ReceivedSpan:
    """One span as it arrived (ids as hex strings, ``parent_span_id`` ``""`` for a root)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int  # the OTLP enum: 1 INTERNAL, 3 CLIENT
    attributes: dict[str, Any]
    status_code: int  # the OTLP enum: 0 UNSET, 1 OK, 2 ERROR
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""


def _value(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one ``ExportTraceServiceRequest``."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(ReceivedSpan(
                    name=span.name,
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex(),
                    kind=span.kind,
                    attributes=_attributes(span.attributes),
                    status_code=span.status.code,
                    resource=resource,
                    scope=scope_spans.scope.name,
                ))
    return spans


class OTLPReceiver(LoopbackServer):
    """Use as a context manager; ``endpoint`` is the base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT``."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []
        self._cond = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                received = decode(body)
                with owner._cond:
                    owner.paths.append(self.path)
                    owner.content_types.append(self.headers.get("Content-Type", ""))
                    owner.spans.extend(received)
                    owner._cond.notify_all()
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        super().__init__(Handler)

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT`` (the exporter adds ``/v1/traces``)."""
        return self.url

    def wait_spans(self, count: int, timeout: float = 10.0) -> list[ReceivedSpan]:
        """Block until ``count`` spans arrived and return them; ``AssertionError`` after
        ``timeout`` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.spans) >= count, timeout):
                raise AssertionError(f"expected {count} spans, got {len(self.spans)}")
            return list(self.spans)
