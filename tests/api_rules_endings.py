"""What real servers send and refuse at the ends of a turn (issue "Wire fidelity 3", kinds 1, 8-10).

Rules read a request body and return ``None`` when the real API accepts it, else its error text
(worded as the API words it), for ``api_rules.enforcing``. Replies are answers the way the real
servers give them: OpenAI's 429 for a used-up quota, a local gateway (LiteLLM's proxy) that
answers a request without a key with a bare 500, streams whose usage counts are not numbers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from providers_server import Captured, Reply, sse

# --- Anthropic Messages API ----------------------------------------------------------------------


def anthropic_system_not_blank(body: Any) -> str | None:
    """``system`` (a string or text blocks) holds more than whitespace when it is sent."""
    system = body.get("system")
    if system is None:
        return None
    blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
    for block in blocks:
        if block.get("type") == "text" and not str(block.get("text", "")).strip():
            return "system: text content blocks must be non-empty"
    return None


# --- OpenAI chat completions ---------------------------------------------------------------------

QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
)


def openai_quota_exceeded() -> Reply:
    """OpenAI's HTTP 429 for an account whose quota is used up (not a rate limit: it lasts)."""
    body = {
        "error": {
            "message": QUOTA_MESSAGE,
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    return Reply([json.dumps(body).encode()], status=429, content_type="application/json", chunked=False)


def openai_rate_limited() -> Reply:
    """OpenAI's HTTP 429 for a rate limit (worth a retry)."""
    body = {
        "error": {
            "message": "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): "
            "Limit 3, Used 3, Requested 1. Please try again in 20s.",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    return Reply([json.dumps(body).encode()], status=429, content_type="application/json", chunked=False)


def keyless_gateway(status: int, answer: Reply) -> Callable[[Captured], Reply]:
    """A ``ProviderServer`` handler for a local gateway that wants a key (LiteLLM's proxy): a
    request without ``Authorization`` gets HTTP ``status`` with a bare text body (``500``:
    ``Internal Server Error``, as the proxy answers), one with a key gets ``answer``."""
    text = {401: b"Unauthorized", 403: b"Forbidden", 500: b"Internal Server Error"}[status]

    def handle(captured: Captured) -> Reply:
        if any(name.lower() == "authorization" for name in captured.headers):
            return answer
        return Reply([text], status=status, content_type="text/plain", chunked=False)

    return handle


def chat_text_with_usage(text: str, usage: dict[str, Any]) -> Reply:
    """A chat-completions stream of ``text`` whose usage chunk carries ``usage`` as given."""
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": usage},
        done=True,
    )
    return Reply([body])


def chat_tool_call_without_usage(call_id: str, name: str, arguments: dict[str, Any]) -> Reply:
    """A chat-completions tool call from a server that sends no usage chunk (asked or not)."""
    body = sse(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                    "finish_reason": None,
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        done=True,
    )
    return Reply([body])
