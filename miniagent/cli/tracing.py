"""Traces of the CLI's runs, configured by the standard ``OTEL_*`` variables (extra ``otel``).

When tracing is on (``wanted_exporters``), each run becomes one ``invoke_agent`` trace
(``miniagent.otel``) sent by the OpenTelemetry SDK; otherwise nothing of OpenTelemetry is
imported. The rules:

- On when ``OTEL_SDK_DISABLED`` is not ``true`` and ``OTEL_TRACES_EXPORTER`` names an exporter
  (``otlp``, ``console``; a comma-separated list; ``none`` is off), or, with
  ``OTEL_TRACES_EXPORTER`` unset, when an OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT``
  or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). Unlike the SDK's own default, an unset exporter and
  no endpoint is off: a CLI run never posts to a collector nobody asked for.
- ``otlp`` is OTLP/HTTP with protobuf (``opentelemetry-exporter-otlp-proto-http``), which reads
  its endpoint, headers, timeout and compression from the standard variables itself; ``grpc``
  (``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL``) works when ``opentelemetry-exporter-otlp-proto-grpc``
  is installed. ``console`` writes the spans to stderr (stdout carries only the answer).
- The resource is the SDK's (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), with
  ``service.name`` ``miniagent`` when they name none; the sampler is the SDK's
  (``OTEL_TRACES_SAMPLER``).
- ``TRACEPARENT`` (and ``TRACESTATE``), W3C trace context: each run's span is a child of it; a
  malformed value is ignored, as the W3C propagator does.
- Content goes on spans only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
- Tracing asked for but its packages missing, or an exporter unknown: one line on stderr, and the
  command runs untraced (a trace is never a reason to fail a run).
- Spans are flushed after every run, within ``FLUSH_SECONDS``, also when the run ended by a
  signal or ``--timeout`` (the run closes its spans first); the second Ctrl-C, which leaves at
  once, does not wait for the collector. An OTLP export (its retries included) gives up after
  ``FLUSH_SECONDS`` too, unless ``OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT`` says otherwise, so a
  collector that is down costs a run at most that long.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FLUSH_SECONDS", "Tracing", "start_tracing", "wanted_exporters"]

FLUSH_SECONDS = 5.0  # the most a run's end waits for the collector
_INSTALL = "pip install 'miniagent[otel]'"
_OTLP_MODULES = {  # OTEL_EXPORTER_OTLP_PROTOCOL -> the exporter's module
    "http/protobuf": "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "grpc": "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
}


def wanted_exporters(environ: Mapping[str, str] | None = None) -> list[str]:
    """The span exporters the environment asks for (lower case, ``none`` left out); empty:
    tracing is off."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [name.strip().lower() for name in env.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if names:
        return [name for name in names if name != "none"]
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return ["otlp"]
    return []


class Tracing:
    """The command's tracer, its SDK provider and the parent context of its runs.

    Args:
        provider: the SDK ``TracerProvider`` the exporters hang on.
        tracer: the ``OtelTracer`` given to every ``run_agent``.
    """

    def __init__(self, provider: Any, tracer: Any) -> None:
        self.provider = provider
        self.tracer = tracer

    def flush(self) -> None:
        """Send the finished spans now (at most ``FLUSH_SECONDS``)."""
        self.provider.force_flush(int(FLUSH_SECONDS * 1000))

    def close(self) -> None:
        """Flush and stop the exporters (the end of the command)."""
        self.flush()
        self.provider.shutdown()


def start_tracing(warn: Callable[[str], None], environ: Mapping[str, str] | None = None) -> Tracing | None:
    """The command's ``Tracing`` when the environment asks for traces, else ``None``.

    Args:
        warn: shows one line on stderr (tracing asked for, but it cannot be done).
        environ: the environment (default ``os.environ``).

    Returns:
        ``None`` when tracing is off, or asked for but impossible (``warn`` said why).
    """
    env = os.environ if environ is None else environ
    names = wanted_exporters(env)
    if not names:
        return None
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from ..otel import OtelTracer
    except ImportError as error:
        warn(f"miniagent: traces need the OpenTelemetry SDK ({error.name}): {_INSTALL}; no traces sent")
        return None
    try:
        exporters = [exporter for name in names if (exporter := _exporter(name, env, warn)) is not None]
        if not exporters:
            return None
        provider = TracerProvider(resource=_resource())
        for exporter in exporters:
            provider.add_span_processor(BatchSpanProcessor(exporter))
    except Exception as error:  # a bad OTEL_* value the SDK refuses: the run goes on untraced
        warn(f"miniagent: traces could not be set up ({type(error).__name__}: {error}); no traces sent")
        return None
    _quiet_sdk_logs()
    return Tracing(provider, OtelTracer(provider, parent=_parent_context(env)))


def _quiet_sdk_logs() -> None:
    """Unless the CLI's logging shows records (``-v``, ``--debug``), the SDK's own records (a
    retry, a failed export) reach stderr only from ERROR up, as ``miniagent: traces: ...`` lines
    (control characters escaped), instead of Python's bare last-resort lines."""
    import logging

    from .terminal import neutralise

    if logging.getLogger().handlers:
        return
    class Lines(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"miniagent: traces: {neutralise(record.getMessage())}"

    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.ERROR)
    handler.setFormatter(Lines())
    logging.getLogger("opentelemetry").addHandler(handler)


def _exporter(name: str, env: Mapping[str, str], warn: Callable[[str], None]) -> Any:
    """One span exporter by its ``OTEL_TRACES_EXPORTER`` name, or ``None`` (``warn`` said why)."""
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    if name != "otlp":
        warn(f"miniagent: OTEL_TRACES_EXPORTER={name} is not supported (otlp, console); no traces sent there")
        return None
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    protocol = protocol.strip().lower() or "http/protobuf"
    module = _OTLP_MODULES.get(protocol)
    if module is None:
        warn(f"miniagent: OTLP protocol {protocol!r} is not supported (http/protobuf, grpc); no traces sent")
        return None
    try:
        exporter_class = importlib.import_module(module).OTLPSpanExporter
    except ImportError as error:
        warn(f"miniagent: the OTLP {protocol} exporter needs {error.name}: {_INSTALL}; no traces sent")
        return None
    timeouts = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
    if any(env.get(name) for name in timeouts):
        return exporter_class()  # the exporter reads the variable itself
    return exporter_class(timeout=FLUSH_SECONDS)  # the SDK's 10 s would outlast the flush


def _resource() -> Any:
    """The SDK's resource from the environment, ``service.name`` ``miniagent`` when it names none."""
    from opentelemetry.sdk.resources import Resource

    from .. import __version__

    resource = Resource.create({"service.version": __version__})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "miniagent"}))
    return resource


def _parent_context(env: Mapping[str, str]) -> Any:
    """The context ``TRACEPARENT`` / ``TRACESTATE`` give, or ``None`` without ``TRACEPARENT``."""
    if not env.get("TRACEPARENT"):
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier = {"traceparent": env["TRACEPARENT"], "tracestate": env.get("TRACESTATE", "")}
    return TraceContextTextMapPropagator().extract(carrier)
