"""Bedrock ``ConverseStream``'s request rules, enforced by a loopback server (``BedrockAPI``, a
``ProviderServer`` handler), each worded as the API words its error.

Written from the API reference, the ``bedrock-runtime`` service model and the errors the API
returns (a ``ValidationException`` is HTTP 400 with ``{"message"}`` and the
``x-amzn-ErrorType`` header), independently of miniagent's code:

- authentication: a bearer token (a Bedrock API key), or an AWS Signature Version 4 that this
  module checks itself from the documented algorithm (canonical request, string to sign,
  derived key; the path encoded twice, as for every service but S3);
- the path ``/model/{modelId}/converse-stream``;
- the conversation starts with a user message and alternates roles; no blank text block;
- ``toolConfig`` is there when tool blocks are; each ``toolUse`` is answered by a ``toolResult``
  in the next message and no more results than uses; ids match ``[a-zA-Z0-9_.:-]+``; a tool's
  description is not empty; ``toolResult.status`` only for the Anthropic models;
- with Anthropic thinking enabled (``additionalModelRequestFields.thinking``), the Anthropic
  model's own rule, passed on with Bedrock's prefix "The model returned the following errors: ".
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote

from eventstream_frames import encode_messages, transcript
from providers_server import Captured, Reply

KEY = "ABSKQmVkcm9ja0FQSUtleS10ZXN0"
ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = (
    "AKIDEXAMPLETEST",
    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "FwoGZXIvYXdzEXAMPLE",
)
EVENTSTREAM = "application/vnd.amazon.eventstream"
_PATH = re.compile(r"/model/([^/]+)/converse-stream")
_ID = re.compile(r"[a-zA-Z0-9_.:-]+")
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})"
)
Rule = Callable[[Any, str], "str | None"]


def bedrock_reply(*names: str, chunked: Callable[[bytes], list[bytes]] | None = None) -> Reply:
    """The transcripts ``names`` (one after the other) as an event-stream reply."""
    body = b"".join(b"".join(encode_messages(transcript(name))) for name in names)
    return Reply(chunked(body) if chunked else [body], content_type=EVENTSTREAM)


def bedrock_error(message: str, status: int = 400, kind: str = "ValidationException") -> Reply:
    """An error answer: ``{"message"}`` with the ``x-amzn-ErrorType`` header."""
    headers = {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    body = json.dumps({"message": message}).encode()
    return Reply([body], status=status, headers=headers, content_type="application/json", chunked=False)


def _texts(body: Any) -> list[tuple[int, int, dict[str, Any]]]:
    return [
        (i, j, block)
        for i, m in enumerate(body.get("messages") or [])
        for j, block in enumerate(m["content"])
    ]


def conversation_roles(body: Any, model: str) -> str | None:
    messages = body.get("messages") or []
    if not messages or messages[0]["role"] != "user":
        return (
            "A conversation must start with a user message. Try again with a conversation that starts "
            "with a user message."
        )
    for before, after in itertools.pairwise(messages):
        if before["role"] == after["role"]:
            return (
                "A conversation must alternate between user and assistant roles. Make sure the conversation "
                "alternates between user and assistant roles and try again."
            )
    return None


def blank_text(body: Any, model: str) -> str | None:
    for i, j, block in _texts(body):
        if "text" in block and not block["text"].strip():
            return (
                f"The text field in the ContentBlock object at messages.{i}.content.{j} is blank. "
                "Add text to the text field, and try again."
            )
    return None


def tool_blocks(body: Any, model: str) -> str | None:
    blocks = [block for _, _, block in _texts(body)]
    if any("toolUse" in b or "toolResult" in b for b in blocks) and not body.get("toolConfig"):
        return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
    for k, tool in enumerate((body.get("toolConfig") or {}).get("tools") or (), 1):
        if tool["toolSpec"].get("description") == "":
            return (
                "1 validation error detected: Value '' at "
                f"'toolConfig.tools.{k}.member.toolSpec.description' failed to satisfy constraint: "
                "Member must have length greater than or equal to 1"
            )
    for i, j, block in _texts(body):
        use = block.get("toolUse") or block.get("toolResult")
        if use is not None:
            field = "toolUse" if "toolUse" in block else "toolResult"
            tool_id = use["toolUseId"]
            if not _ID.fullmatch(tool_id) or len(tool_id) > 64:
                return (
                    f"1 validation error detected: Value '{tool_id}' at "
                    f"'messages.{i + 1}.member.content.{j + 1}.member.{field}.toolUseId' failed to satisfy "
                    "constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.:-]+"
                )
        if "toolResult" in block and "status" in block["toolResult"] and "anthropic." not in model:
            return (
                "This model doesn't support the toolResult.status field. Remove toolResult.status and "
                "try again."
            )
    return None


def tool_results_follow(body: Any, model: str) -> str | None:
    messages = body["messages"]
    for i, message in enumerate(messages):
        used = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        following = messages[i + 1]["content"] if i + 1 < len(messages) else []
        answered = [b["toolResult"]["toolUseId"] for b in following if "toolResult" in b]
        if used and i + 1 < len(messages):
            missing = [x for x in used if x not in answered]
            if missing:
                ids = ", ".join(missing)
                return f"Expected toolResult blocks at messages.{i + 1}.content for the following Ids: {ids}"
        if len(answered) > len(used) and i + 1 < len(messages):
            return (
                f"The number of toolResult blocks at messages.{i + 1}.content exceeds the number of toolUse "
                "blocks of previous turn."
            )
    return None


def anthropic_thinking(issued: dict[str, str]) -> Rule:
    """Thinking on: every ``reasoningText`` sent back is one the server issued (signature ->
    text), unchanged, and the assistant turn of the last tool round starts with reasoning."""

    def rule(body: Any, model: str) -> str | None:
        thinking = ((body.get("additionalModelRequestFields") or {}).get("thinking") or {}).get("type")
        if thinking != "enabled":
            return None
        for i, j, block in _texts(body):
            text = (block.get("reasoningContent") or {}).get("reasoningText")
            if text is not None and issued.get(text.get("signature", "")) != text.get("text"):
                return (
                    f"The model returned the following errors: messages.{i}.content.{j}: Invalid "
                    "`signature` in `thinking` block"
                )
        messages = body["messages"]
        if len(messages) >= 2 and any("toolResult" in b for b in messages[-1]["content"]):
            first = messages[-2]["content"][0]
            if "reasoningContent" not in first:
                found = "tool_use" if "toolUse" in first else "text"
                return (
                    f"The model returned the following errors: messages.{len(messages) - 2}.content.0.type: "
                    f"Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is "
                    "enabled, a final `assistant` message must start with a thinking block (preceeding the "
                    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
                    "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
                    "Please consult our documentation at "
                    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                )
        return None

    return rule


def sigv4_problem(captured: Captured, raw_body: bytes) -> str | None:
    """``None`` when the request carries a valid SigV4 signature of ``raw_body`` by the test key."""
    headers = {k.lower(): v for k, v in captured.headers.items()}
    found = _AUTH.fullmatch(headers.get("authorization", ""))
    if found is None or found["key"] != ACCESS_KEY:
        return "The security token included in the request is invalid."
    names = found["signed"].split(";")
    if "host" not in names or "x-amz-date" not in names:
        return "The security token included in the request is invalid."
    if headers.get("x-amz-security-token") not in (None, SESSION_TOKEN):
        return "The security token included in the request is invalid."
    canonical_headers = "".join(f"{name}:{' '.join(headers.get(name, '').split())}\n" for name in names)
    path = captured.path.split("?")[0]
    canonical = "\n".join(
        [
            "POST",
            quote(path, safe="/~"),
            "",
            canonical_headers,
            found["signed"],
            hashlib.sha256(raw_body).hexdigest(),
        ]
    )
    scope = f"{found['date']}/{found['region']}/{found['service']}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", headers["x-amz-date"], scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = f"AWS4{SECRET_KEY}".encode()
    for part in (found["date"], found["region"], found["service"], "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    if hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest() != found["signature"]:
        return (
            "The request signature we calculated does not match the signature you provided. Check your AWS "
            "Secret Access Key and signing method. Consult the service documentation for details."
        )
    return None


class BedrockAPI:
    """A ``ProviderServer`` handler that answers as Bedrock's runtime: the error of the first rule a
    request breaks, else the next reply (the last repeats).

    Args:
        replies: the answers, in order.
        region, service: what a SigV4 signature must be scoped to.
        extra_rules: more body rules ``rule(body, model_id)``.

    Attributes:
        refused: the error texts answered so far; ``models``: the model id of each request;
        ``signed``: whether each request came signed (else with the bearer key).
    """

    def __init__(
        self, *replies: Reply, region: str = "us-east-1", extra_rules: tuple[Rule, ...] = ()
    ) -> None:
        self.replies = list(replies)
        self.region = region
        self.rules: list[Rule] = [
            conversation_roles,
            blank_text,
            tool_blocks,
            tool_results_follow,
            *extra_rules,
        ]
        self.refused: list[str] = []
        self.models: list[str] = []
        self.signed: list[bool] = []

    def __call__(self, captured: Captured) -> Reply:
        problem = self._auth_problem(captured)
        if problem is not None:
            self.refused.append(problem)
            return bedrock_error(problem, 403, "UnrecognizedClientException")
        found = _PATH.fullmatch(captured.path)
        if found is None:
            self.refused.append("path")
            return Reply(
                [b'{"message":"Not Found"}'], status=404, content_type="application/json", chunked=False
            )
        model = unquote(found.group(1))
        self.models.append(model)
        for rule in self.rules:
            message = rule(captured.body, model)
            if message is not None:
                self.refused.append(message)
                return bedrock_error(message)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def _auth_problem(self, captured: Captured) -> str | None:
        headers = {k.lower(): v for k, v in captured.headers.items()}
        auth = headers.get("authorization", "")
        if auth == f"Bearer {KEY}":
            self.signed.append(False)
            return None
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return "The security token included in the request is invalid."
        self.signed.append(True)
        scope = _AUTH.fullmatch(auth)
        if scope is None or scope["region"] != self.region or scope["service"] != "bedrock":
            return "Credential should be scoped to a valid region."
        return sigv4_problem(captured, captured.raw or b"")
