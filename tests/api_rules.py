"""Request rules of the real APIs, enforced by the loopback test servers (issue 11).

Each rule reads a request body and returns ``None`` when the real API would accept it, else the
error message the real API gives for it (worded as the API words it). ``enforcing`` turns rules
and scripted replies into a ``ProviderServer`` handler that answers a breaking request with the
API's HTTP 400 error body, so a test fails the way a user's run would.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from providers_server import Captured, Reply

Rule = Callable[[Any], "str | None"]

THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def anthropic_error(message: str) -> Reply:
    """An Anthropic ``400 invalid_request_error`` reply."""
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return Reply([json.dumps(body).encode()], status=400, content_type="application/json", chunked=False)


def openai_error(message: str) -> Reply:
    """An OpenAI-style ``400 invalid_request_error`` reply (DeepSeek uses the same shape)."""
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return Reply([json.dumps(body).encode()], status=400, content_type="application/json", chunked=False)


def enforcing(
    rules: Iterable[Rule], replies: list[Reply], error: Callable[[str], Reply]
) -> Callable[[Captured], Reply]:
    """A ``ProviderServer`` handler: the first broken rule's error, else the next reply in order
    (the last one repeats)."""
    rules = list(rules)
    queue = list(replies)

    def handle(captured: Captured) -> Reply:
        for rule in rules:
            problem = rule(captured.body)
            if problem is not None:
                return error(problem)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return handle


# --- Anthropic Messages API ----------------------------------------------------------------------


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def anthropic_unique_tool_use_ids(body: Any) -> str | None:
    """Every ``tool_use`` id of the request is unique."""
    seen: set[str] = set()
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(_blocks(message)):
            if block.get("type") == "tool_use":
                if block["id"] in seen:
                    return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
                seen.add(block["id"])
    return None


def anthropic_tool_results_follow(body: Any) -> str | None:
    """Each ``tool_use`` has a ``tool_result`` in the next message."""
    messages = body["messages"]
    for i, message in enumerate(messages):
        ids = [b["id"] for b in _blocks(message) if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = _blocks(messages[i + 1]) if i + 1 < len(messages) else []
        answered = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
        missing = [x for x in ids if x not in answered]
        if missing:
            return (
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
    return None


def anthropic_error_results_have_content(body: Any) -> str | None:
    """A ``tool_result`` with ``is_error: true`` has content."""
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(_blocks(message)):
            if block.get("type") == "tool_result" and block.get("is_error") and not block.get("content"):
                return f"messages.{i}.content.{j}.tool_result: content cannot be empty if `is_error` is true"
    return None


def anthropic_thinking(issued: dict[str, str]) -> Rule:
    """With ``thinking`` enabled: the final assistant turn (the one whose tools the last user
    message answers) starts with a thinking block, and every ``thinking`` block sent back is one
    the server issued (``issued``: signature -> thinking text), unchanged."""

    def rule(body: Any) -> str | None:
        if (body.get("thinking") or {}).get("type") != "enabled":
            return None
        messages = body["messages"]
        for i, message in enumerate(messages):
            for j, block in enumerate(_blocks(message)):
                if block.get("type") == "thinking" and issued.get(block.get("signature", "")) != block.get(
                    "thinking"
                ):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
        last_user = messages[-1]
        if not any(b.get("type") == "tool_result" for b in _blocks(last_user)) or len(messages) < 2:
            return None
        i = len(messages) - 2
        first = _blocks(messages[i])[0]
        if first.get("type") not in ("thinking", "redacted_thinking"):
            return (
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must "
                "start with a thinking block (preceeding the lastmost set of `tool_use` and "
                "`tool_result` blocks). We recommend you include thinking blocks from previous turns. "
                "To avoid this requirement, disable `thinking`. Please consult our documentation at "
                f"{THINKING_DOCS}"
            )
        return None

    return rule


ANTHROPIC_RULES: list[Rule] = [
    anthropic_unique_tool_use_ids,
    anthropic_tool_results_follow,
    anthropic_error_results_have_content,
]


# --- OpenAI chat completions (and DeepSeek) ------------------------------------------------------


def openai_tool_messages_follow(body: Any) -> str | None:
    """Each ``tool_calls`` entry of an assistant message is answered by its own tool message."""
    messages = body["messages"]
    for i, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        if not calls:
            continue
        answers: Counter[str] = Counter()
        for later in messages[i + 1 :]:
            if later.get("role") != "tool":
                break
            answers[later.get("tool_call_id")] += 1
        missing = []
        for call_id in calls:
            if answers[call_id] > 0:
                answers[call_id] -= 1
            else:
                missing.append(call_id)
        if missing:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding "
                f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(missing)}"
            )
    return None


def deepseek_reasoning_passed_back(body: Any) -> str | None:
    """DeepSeek thinking mode: an assistant message with tool calls carries ``reasoning_content``."""
    for message in body["messages"]:
        if (
            message.get("role") == "assistant"
            and message.get("tool_calls")
            and "reasoning_content" not in message
        ):
            return "The reasoning_content in the thinking mode must be passed back to the API."
    return None


OPENAI_RULES: list[Rule] = [openai_tool_messages_follow]
