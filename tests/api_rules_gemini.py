"""The Gemini API's request rules, enforced by a loopback server (``GeminiAPI``, a
``ProviderServer`` handler).

Each rule reads a request and returns ``None`` when the real API would accept it, else the
API's own error text; the server answers a breaking request as the API does (an HTTP error with
``{"error": {"code", "message", "status"}}``). The rules are written from the API's documents and
error texts, independently of miniagent's code:

- the key: ``x-goog-api-key`` (a missing key is a 403 ``PERMISSION_DENIED``, a wrong one a 400
  "API key not valid"); the path ``/v1beta/models/{model}:streamGenerateContent?alt=sse``;
- the body: known top-level fields only ("Invalid JSON payload received. Unknown name"),
  ``contents`` present, valid roles, non-empty parts each holding one kind of data, a
  ``functionResponse.response`` that is an object;
- the turns (function calling guide): a function call turn right after a user turn or a function
  response turn; a function response turn right after a function call turn, with as many
  responses as calls;
- tools: ``parametersJsonSchema`` describes an object (the ``FunctionDeclaration`` reference; the
  wording of this one text is modelled on the API's field errors, the exact text is not
  published), not together with ``parameters``; no ``responseMimeType: application/json`` with
  function declarations;
- thought signatures (Gemini 3 models, https://ai.google.dev/gemini-api/docs/thought-signatures):
  in the current turn (everything after the last user turn with text), the first function call
  of each model turn carries a signature; every signature sent is one the server issued, or one
  of the two placeholders the guide documents.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from providers_server import Captured, Reply

KEY = "gemini-test-key"
PLACEHOLDERS = frozenset(("skip_thought_signature_validator", "context_engineering_is_the_way_to_go"))
PATH_PREFIX = "/v1beta/models/"
PATH_SUFFIX = ":streamGenerateContent?alt=sse"
_FIELDS = frozenset(
    (
        "contents",
        "systemInstruction",
        "tools",
        "toolConfig",
        "generationConfig",
        "safetySettings",
        "cachedContent",
    )
)
_DATA = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
)

Rule = Callable[[Any], "str | None"]

MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools "
    "to work correctly, and missing thought_signature may lead to degraded model performance. "
    "Additional data, function call `default_api:{name}` , position {position}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)


def gemini_error(message: str, code: int = 400, status: str = "INVALID_ARGUMENT") -> Reply:
    """The API's error answer: ``{"error": {"code", "message", "status"}}`` as JSON."""
    body = {"error": {"code": code, "message": message, "status": status}}
    return Reply(
        [json.dumps(body, indent=2).encode()],
        status=code,
        content_type="application/json; charset=UTF-8",
        chunked=False,
    )


def signatures_in(body: bytes) -> set[str]:
    """Every ``thoughtSignature`` in an SSE body of ``GenerateContentResponse`` events."""
    found: set[str] = set()
    for line in body.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b"data:"):
            try:
                found |= set(_signatures(json.loads(line[5:])))
            except ValueError:
                continue
    return found


def _signatures(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "thoughtSignature" and isinstance(value, str):
                yield value
            else:
                yield from _signatures(value)
    elif isinstance(node, list):
        for item in node:
            yield from _signatures(item)


# --- body rules ---------------------------------------------------------------------------------


def known_fields(body: Any) -> str | None:
    for key in body:
        if key not in _FIELDS:
            return f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
    return None


def contents_shape(body: Any) -> str | None:
    """``contents`` present; each turn a valid role with parts that each hold one kind of data."""
    contents = body.get("contents")
    if not contents:
        return "* GenerateContentRequest.contents: contents is not specified\n"
    for i, content in enumerate(contents):
        if content.get("role") not in ("user", "model"):
            return "Please use a valid role: user, model."
        parts = content.get("parts") or []
        if not parts:
            return f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n"
        for j, part in enumerate(parts):
            if sum(1 for key in _DATA if key in part) != 1:
                return (
                    f"* GenerateContentRequest.contents[{i}].parts[{j}].data: required oneof field 'data' "
                    "must have one initialized field\n"
                )
            response = part.get("functionResponse")
            if response is not None and not isinstance(response.get("response"), dict):
                shown = json.dumps(response.get("response"))
                return (
                    f"Invalid value at 'contents[{i}].parts[{j}].function_response.response' "
                    f"(type.googleapis.com/google.protobuf.Struct), {shown}"
                )
    return None


def _calls(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionCall"] for p in content.get("parts", ()) if "functionCall" in p]


def _responses(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for p in content.get("parts", ()) if "functionResponse" in p]


def function_turns(body: Any) -> str | None:
    """A call turn follows a user or response turn; a response turn follows a call turn and
    answers each of its calls."""
    contents = body["contents"]
    for i, content in enumerate(contents):
        before = contents[i - 1] if i else None
        if _calls(content) and (before is None or before["role"] != "user"):
            return (
                "Please ensure that function call turn comes immediately after a user turn or after a "
                "function response turn."
            )
        responses = _responses(content)
        if not responses:
            continue
        if before is None or not _calls(before):
            return "Please ensure that function response turn comes immediately after a function call turn."
        if len(responses) != len(_calls(before)):
            return (
                "Please ensure that the number of function response parts is equal to the number of "
                "function call parts of the function call turn."
            )
    return None


def tool_declarations(body: Any) -> str | None:
    declarations = [d for tool in body.get("tools") or () for d in tool.get("functionDeclarations") or ()]
    for k, declaration in enumerate(declarations):
        schema = declaration.get("parametersJsonSchema")
        where = f"* GenerateContentRequest.tools[0].function_declarations[{k}]"
        if schema is not None and "parameters" in declaration:
            return f"{where}: parameters and parameters_json_schema cannot both be set.\n"
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            return f"{where}.parameters_json_schema: the schema must describe an object (type: object).\n"
    config = body.get("generationConfig") or {}
    if declarations and config.get("responseMimeType") == "application/json":
        return "Function calling with a response mime type: 'application/json' is unsupported"
    return None


def thought_signatures(issued: set[str]) -> Rule:
    """Gemini 3: the current turn's call turns lead with a signature, and every signature sent
    is one the server issued (or a documented placeholder)."""

    def rule(body: Any) -> str | None:
        contents = body["contents"]
        for content in contents:
            for part in content.get("parts", ()):
                sent = part.get("thoughtSignature")
                if sent is not None and sent not in issued and sent not in PLACEHOLDERS:
                    return "Corrupted thought signature."
        starts = [
            i for i, c in enumerate(contents) if c["role"] == "user" and any("text" in p for p in c["parts"])
        ]
        current = contents[starts[-1] + 1 :] if starts else contents
        step = 0
        for content in current:
            if content["role"] != "model" or not _calls(content):
                continue
            step += 1
            first = next(p for p in content["parts"] if "functionCall" in p)
            if "thoughtSignature" not in first:
                return MISSING_SIGNATURE.format(name=first["functionCall"]["name"], position=step)
        return None

    return rule


class GeminiAPI:
    """A ``ProviderServer`` handler that answers as the Gemini API: the error of the first rule a
    request breaks, else the next scripted reply (the last one repeats). The signatures of every
    reply served are remembered as issued.

    Args:
        replies: the streams to answer with, in order.
        key: the key the server accepts.
        extra_rules: more body rules.
    """

    def __init__(self, *replies: Reply, key: str = KEY, extra_rules: tuple[Rule, ...] = ()) -> None:
        self.replies = list(replies)
        self.key = key
        self.issued: set[str] = set()
        self.rules: list[Rule] = [
            known_fields,
            contents_shape,
            function_turns,
            tool_declarations,
            *extra_rules,
        ]
        self.refused: list[str] = []

    def __call__(self, captured: Captured) -> Reply:
        problem = self._problem(captured)
        if isinstance(problem, Reply):
            return problem
        if problem is not None:
            self.refused.append(problem)
            return gemini_error(problem)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        self.issued |= signatures_in(b"".join(reply.chunks))
        return reply

    def _problem(self, captured: Captured) -> Reply | str | None:
        headers = {name.lower(): value for name, value in captured.headers.items()}
        sent = headers.get("x-goog-api-key")
        if sent is None:
            self.refused.append("no key")
            return gemini_error(
                "Method doesn't allow unregistered callers (callers without established identity). "
                "Please use API Key or other form of API consumer identity to call this API.",
                403,
                "PERMISSION_DENIED",
            )
        if sent != self.key:
            self.refused.append("bad key")
            return gemini_error("API key not valid. Please pass a valid API key.")
        path = captured.path
        if not (path.startswith(PATH_PREFIX) and path.endswith(PATH_SUFFIX)):
            model = path.removeprefix(PATH_PREFIX).split(":")[0]
            return gemini_error(
                f"models/{model} is not found for API version v1beta, or is not supported for "
                "generateContent. Call ListModels to see the list of available models and their "
                "supported methods.",
                404,
                "NOT_FOUND",
            )
        model = path[len(PATH_PREFIX) : -len(PATH_SUFFIX)]
        rules = list(self.rules)
        if model.startswith("gemini-3"):
            rules.append(thought_signatures(self.issued))
        for rule in rules:
            found = rule(captured.body)
            if found is not None:
                return found
        return None
