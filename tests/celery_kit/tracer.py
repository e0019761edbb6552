"""A tracer the test workers trace runs with (``run_agent(tracer=...)`` through ``agent_task``):
one JSON line per run, request and tool call, appended to ``MINIAGENT_TEST_TRACE_FILE``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from miniagent.messages import ToolCall
from miniagent.model import ModelEvent, ModelRequest
from miniagent.result import RunResult
from miniagent.tools import Approval
from miniagent.tracing import RunStart


def _write(**line: Any) -> None:
    path = os.environ.get("MINIAGENT_TEST_TRACE_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"pid": os.getpid(), **line}) + "\n")


class FileTrace:
    def __init__(self, run: RunStart) -> None:
        self.user = run.user

    def __enter__(self) -> FileTrace:
        _write(event="run", user=self.user)
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        return None

    def model_request(
        self, request: ModelRequest, stream: Callable[[ModelRequest], Iterable[ModelEvent]]
    ) -> Iterator[ModelEvent]:
        _write(event="request", messages=len(request.messages))
        yield from stream(request)

    def tool_call(
        self, call: ToolCall, approval: Approval, answer: Callable[[], tuple[str, bool]]
    ) -> tuple[str, bool]:
        _write(event="tool_call", name=call.name)
        return answer()

    def finish(self, result: RunResult) -> None:
        _write(event="finish", stop_reason=result.stop_reason)


class FileTracer:
    def trace_run(self, run: RunStart) -> FileTrace:
        return FileTrace(run)
