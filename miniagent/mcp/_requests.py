"""The client's side of MCP: answers to the server's own requests (MCP spec 2025-11-25,
"Client Features" and "Utilities").

Invariants:

- Every request of the server is answered at once, in the thread that read it: nothing here
  waits for the network or a person unless the application gave a function that does.
- ``ping``: an empty result. ``roots/list``: the configured roots (by default the working
  folder) as ``file://`` URIs; the ``roots`` capability is always declared.
- ``elicitation/create``: the application's ``elicitation`` function answers; without one the
  request is declined (``{"action": "decline"}``) and the capability is not declared. An
  accepted form gets the schema's ``default`` for every property the answer left out.
- ``sampling/createMessage``: refused with error -32601 unless the application gave a
  ``ModelClient`` (``sampling``); then the messages are sent to it as one turn, without tools,
  and its text is the result.
- Anything else: error -32601 (method not found). A function of the application that raises
  gives error -32603 (internal error) with the exception's type only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._log import Logger
from ._wire import Message

if TYPE_CHECKING:
    from ..model import ModelClient

__all__ = ["ClientSide", "Elicitation"]

Elicitation = Callable[[dict[str, Any]], dict[str, Any]]
"""An application's answer to ``elicitation/create``: takes the request's params (``message``,
``requestedSchema``...) and returns the result (``{"action": "accept", "content": {...}}``,
``{"action": "decline"}`` or ``{"action": "cancel"}``)."""

logger = Logger("miniagent.mcp")


class ClientSide:
    """What the client offers a server, and how it answers the server's requests.

    Args:
        server: the server's name (log lines).
        roots: folders offered as roots; ``None``: the working folder at the time of asking.
        elicitation: the application's answer to ``elicitation/create``, or ``None``.
        sampling: a model client for ``sampling/createMessage``, or ``None``.
    """

    def __init__(
        self,
        server: str,
        roots: Sequence[str | os.PathLike[str]] | None = None,
        elicitation: Elicitation | None = None,
        sampling: ModelClient | None = None,
    ) -> None:
        """Store the settings."""
        self.server = server
        self.roots = None if roots is None else [os.fspath(root) for root in roots]
        self.elicitation = elicitation
        self.sampling = sampling

    def capabilities(self) -> dict[str, Any]:
        """The ``capabilities`` object of ``initialize``."""
        offered: dict[str, Any] = {"roots": {"listChanged": False}}
        if self.elicitation is not None:
            offered["elicitation"] = {"form": {}}
        if self.sampling is not None:
            offered["sampling"] = {}
        return offered

    def answer(self, request: Message) -> Message:
        """The response to one request of the server (rules: module docstring)."""
        method = request.get("method")
        params = request.get("params")
        params = params if isinstance(params, dict) else {}
        try:
            if method == "ping":
                result: dict[str, Any] | None = {}
            elif method == "roots/list":
                result = {"roots": self._roots()}
            elif method == "elicitation/create":
                result = self._elicit(params)
            elif method == "sampling/createMessage" and self.sampling is not None:
                result = self._sample(params)
            else:
                result = None
        except Exception as exc:  # the application's function failed: say so, keep going
            logger.warning("[%s] answering %s failed: %s", self.server, method, type(exc).__name__)
            return _error(request, -32603, f"{method} failed in the client ({type(exc).__name__})")
        if result is None:
            return _error(request, -32601, f"Method not found: {method}")
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}

    # --- the requests ---------------------------------------------------------------------------

    def _roots(self) -> list[dict[str, str]]:
        from pathlib import Path  # here: importing the package does not load pathlib

        folders = self.roots if self.roots is not None else [os.getcwd()]
        roots = []
        for folder in folders:
            path = Path(folder).resolve()
            roots.append({"uri": path.as_uri(), "name": path.name or str(path)})
        return roots

    def _elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.elicitation is None:
            return {"action": "decline"}
        result = dict(self.elicitation(params))
        if result.get("action") == "accept":
            result["content"] = with_defaults(params.get("requestedSchema"), result.get("content"))
        return result

    def _sample(self, params: dict[str, Any]) -> dict[str, Any]:
        from ..messages import Message as ChatMessage
        from ..model import ModelRequest, TextEvent

        assert self.sampling is not None
        messages = []
        for item in params.get("messages") or []:
            if isinstance(item, dict) and item.get("role") in ("user", "assistant"):
                messages.append(ChatMessage(item["role"], _text_of(item.get("content"))))
        system = params.get("systemPrompt")
        request = ModelRequest(system=system if isinstance(system, str) else "", messages=messages)
        text = "".join(e.text for e in self.sampling.stream(request) if isinstance(e, TextEvent))
        model = getattr(self.sampling, "model", None)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": model if isinstance(model, str) else "miniagent",
            "stopReason": "endTurn",
        }


def with_defaults(schema: Any, content: Any) -> dict[str, Any]:
    """``content`` (an accepted elicitation form) with the ``default`` of every property of
    ``schema`` (``requestedSchema``) that it leaves out."""
    filled = dict(content) if isinstance(content, dict) else {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict):
        for name, field in properties.items():
            if name not in filled and isinstance(field, dict) and "default" in field:
                filled[name] = field["default"]
    return filled


def _text_of(content: Any) -> str:
    """A sampling message's content (one block or a list of blocks) as text."""
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        if isinstance(block, dict):
            kind = block.get("type")
            parts.append(str(block.get("text", "")) if kind == "text" else f"[{kind} content]")
    return "\n".join(parts)


def _error(request: Message, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}
