"""Request rules of the OpenAI Responses API (stateless use), enforced by the loopback server.

Written from the API's reference and the error texts users report, independently of miniagent's
code. Each rule reads a request body and returns ``None`` when the real API would accept it, else
``(status, message)`` worded as the API words it. ``ResponsesAPI`` is a ``ProviderServer`` handler
that applies them, answers with scripted replies and remembers every reasoning item its replies
issued (id -> ``encrypted_content``), so a reasoning item sent back is checked byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from api_rules_requests import _shape_problem, _strict_schema_problem
from providers_server import Captured, Reply

Problem = tuple[int, str]
Rule = Callable[[Any, dict[str, str]], "Problem | None"]

BODY_FIELDS = {
    "model", "input", "instructions", "stream", "store", "include", "tools", "tool_choice",
    "temperature", "top_p", "max_output_tokens", "reasoning", "text", "parallel_tool_calls",
    "metadata", "previous_response_id", "truncation", "user", "service_tier", "prompt_cache_key",
    "safety_identifier", "max_tool_calls", "top_logprobs", "background", "conversation", "prompt",
    "stream_options",
}  # fmt: skip
"""The body fields the API documents (``Unknown parameter`` for any other)."""

REASONING_MODELS = ("o1", "o3", "o4", "gpt-5")


def openai_error(status: int, message: str, param: str | None = None) -> Reply:
    """The API's error answer: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}
    return Reply([json.dumps(body).encode()], status=status, content_type="application/json", chunked=False)


def issued_in(reply_body: bytes) -> dict[str, str]:
    """The reasoning items a streamed reply carries whole (``response.output_item.done``): id ->
    ``encrypted_content``, read from the raw lines (the JSON decoder would not change a string,
    but the raw text is what the server issued)."""
    issued: dict[str, str] = {}
    for line in reply_body.decode().splitlines():
        if not line.startswith("data: {"):
            continue
        data = json.loads(line[6:])
        item = data.get("item") or {}
        done = data.get("type") == "response.output_item.done" and item.get("type") == "reasoning"
        if done and isinstance(item.get("encrypted_content"), str):
            issued[item["id"]] = item["encrypted_content"]
    return issued


# --- the rules -----------------------------------------------------------------------------------


def known_fields(body: Any, issued: dict[str, str]) -> Problem | None:
    for name in body:
        if name not in BODY_FIELDS:
            return 400, f"Unknown parameter: '{name}'."
    return None


def stateless(body: Any, issued: dict[str, str]) -> Problem | None:
    """What miniagent promises: every request is streamed and stored nowhere."""
    if body.get("store") is not False or body.get("stream") is not True:
        return 400, "this test server takes only stateless streamed requests (store: false, stream: true)"
    return None


def encrypted_content_supported(body: Any, issued: dict[str, str]) -> Problem | None:
    include = body.get("include") or []
    if "reasoning.encrypted_content" in include and not body["model"].startswith(REASONING_MODELS):
        return 400, "Encrypted content is not supported with this model."
    return None


def reasoning_model_parameters(body: Any, issued: dict[str, str]) -> Problem | None:
    if body["model"].startswith(REASONING_MODELS) and "temperature" in body and body["temperature"] != 1:
        return 400, "Unsupported parameter: 'temperature' is not supported with this model."
    return None


def tool_outputs_answer_calls(body: Any, issued: dict[str, str]) -> Problem | None:
    """Every ``function_call`` has a ``function_call_output`` and every output a call before it."""
    items = body["input"]
    calls = [i.get("call_id") for i in items if i.get("type") == "function_call"]
    seen: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            seen.add(item["call_id"])
        elif item.get("type") == "function_call_output" and item["call_id"] not in seen:
            return 400, f"No tool call found for function call output with call_id {item['call_id']}."
    answered = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    for call_id in calls:
        if call_id not in answered:
            return 400, f"No tool output found for function call {call_id}."
    return None


def reasoning_items(body: Any, issued: dict[str, str]) -> Problem | None:
    """A reasoning item: sent stateless only with its ``encrypted_content``, the one issued for its
    id, byte for byte, and immediately followed by a message or a function call."""
    items = body["input"]
    for index, item in enumerate(items):
        if item.get("type") != "reasoning":
            continue
        item_id = item.get("id", "")
        if "encrypted_content" not in item:
            return 404, (
                f"Item with id '{item_id}' not found. Items are not persisted when `store` is set to false. "
                "Try again with `store` set to true, or remove this item from your input."
            )
        if issued.get(item_id) != item["encrypted_content"]:
            return 400, f"The encrypted content for item {item_id} could not be verified."
        following = items[index + 1] if index + 1 < len(items) else {}
        if following.get("type") not in ("message", "function_call") and following.get("role") != "assistant":
            return (
                400,
                f"Item '{item_id}' of type 'reasoning' was provided without its required following item.",
            )
    return None


def function_schemas(body: Any, issued: dict[str, str]) -> Problem | None:
    """Function tools: an object root that says what every object and array holds; a function not
    sent ``strict: false`` is strict (the API's default) and keeps every strict rule."""
    for tool in body.get("tools") or ():
        parameters = tool.get("parameters")
        name = tool["name"]
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            kind = parameters.get("type") if isinstance(parameters, dict) else None
            return 400, (
                f"Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', "
                f"got 'type: \"{kind}\"'."
            )
        problem = _shape_problem(parameters)
        if problem is None and tool.get("strict", True) is not False:
            problem = _strict_schema_problem(parameters)
        if problem:
            return 400, f"Invalid schema for function '{name}': {problem}"
    return None


def text_format_schema(body: Any, issued: dict[str, str]) -> Problem | None:
    spec = (body.get("text") or {}).get("format") or {}
    if spec.get("type") != "json_schema":
        return None
    problem = _shape_problem(spec["schema"])
    if problem is None and spec.get("strict"):
        problem = _strict_schema_problem(spec["schema"])
    return (400, f"Invalid schema for response_format '{spec['name']}': {problem}") if problem else None


RESPONSES_RULES: list[Rule] = [
    known_fields,
    stateless,
    encrypted_content_supported,
    reasoning_model_parameters,
    tool_outputs_answer_calls,
    reasoning_items,
    function_schemas,
    text_format_schema,
]


class ResponsesAPI:
    """A ``ProviderServer`` handler: the first broken rule's error, else the next reply (the last
    repeats); every reasoning item a reply issues is remembered in ``issued``. ``deployments``
    (Azure: deployment name -> model) says which model a deployment serves."""

    def __init__(
        self, *replies: Reply, rules: list[Rule] | None = None, deployments: dict[str, str] | None = None
    ) -> None:
        self.replies = list(replies)
        self.rules = RESPONSES_RULES if rules is None else rules
        self.deployments = deployments or {}
        self.issued: dict[str, str] = {}
        self.refused: list[str] = []

    def __call__(self, captured: Captured) -> Reply:
        body = captured.body
        body = {**body, "model": self.deployments.get(body.get("model"), body.get("model"))}
        for rule in self.rules:
            problem = rule(body, self.issued)
            if problem is not None:
                self.refused.append(problem[1])
                return openai_error(*problem)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        self.issued.update(issued_in(b"".join(reply.chunks)))
        return reply


def responses_sse(*events: dict[str, Any]) -> bytes:
    """A Responses body: each event named by its ``type``, numbered."""
    out = []
    for number, event in enumerate(events):
        data = {"type": event["type"], "sequence_number": number, **event}
        out.append(f"event: {event['type']}\ndata: {json.dumps(data)}\n\n")
    return "".join(out).encode()


def text_reply(text: str, usage: dict[str, Any] | None = None) -> Reply:
    """A streamed response whose answer is ``text``."""
    item = {"id": "msg_t", "type": "message", "role": "assistant", "status": "completed", "content": []}
    return Reply(
        [
            responses_sse(
                {"type": "response.created", "response": {"id": "resp_t", "status": "in_progress"}},
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_text.delta", "item_id": "msg_t", "output_index": 0, "delta": text},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {
                    "type": "response.completed",
                    "response": {"id": "resp_t", "status": "completed", "usage": usage},
                },
            )
        ]
    )


def call_reply(call_id: str, name: str, arguments: dict[str, Any]) -> Reply:
    """A streamed response with one function call (no reasoning)."""
    item = {"id": f"fc_{call_id}", "type": "function_call", "call_id": call_id, "name": name, "arguments": ""}
    done = {**item, "arguments": json.dumps(arguments), "status": "completed"}
    return Reply(
        [
            responses_sse(
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_item.done", "output_index": 0, "item": done},
                {"type": "response.completed", "response": {"status": "completed"}},
            )
        ]
    )
