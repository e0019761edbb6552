"""MCP tool definitions as ``Tool``s, and MCP tool results as text.

Names: the model sees a name every provider accepts (``^[A-Za-z0-9_-]{1,64}$``): other
characters (MCP allows ``.``) become ``_``, and a name longer than 64 characters keeps its
first 55 and gets ``_`` and 8 hex digits of its SHA-1. A name that is reserved (a built-in tool,
a tool of another server) or taken within the server becomes ``SERVER__TOOL`` (made safe the
same way). The server is always called with the tool's original name.

Results (MCP spec 2025-11-25, "Tools / Tool Result"): text blocks are joined with newlines;
images, audio, embedded resources and resource links are described in one bracketed line each
(an embedded text resource keeps its text), never dropped silently; ``structuredContent`` is
given as JSON when the result has no text block (the spec asks servers to repeat it as text, so
a text block is taken as its rendering; the SDK's ``{"result": ...}`` wrapping would otherwise
say everything twice); ``isError`` becomes ``is_error``. An empty result reads ``(no content)``.
Base64 never reaches the model: inside ``structuredContent`` an image or audio block, a
resource's ``blob`` and any long run of base64 (``BASE64_CHARS`` or more) are described the
same bracketed way.

Naming is linear in the number of tools (a ``tools/list`` may hold tens of thousands).
"""

from __future__ import annotations

import collections
import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["safe_name", "exposed_names", "result_text", "input_schema", "is_read_only"]

MAX_NAME_CHARS = 64
BASE64_CHARS = 256
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def safe_name(name: str) -> str:
    """``name`` as a provider-safe tool name (rule: module docstring)."""
    safe = _UNSAFE.sub("_", name) or "_"
    if len(safe) <= MAX_NAME_CHARS:
        return safe
    import hashlib

    digest = hashlib.sha1(name.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{safe[: MAX_NAME_CHARS - 9]}_{digest}"


def exposed_names(server: str, names: Iterable[str], reserved: Iterable[str]) -> list[str]:
    """The names the model sees for ``names`` (in order) of server ``server``.

    Args:
        server: the server's name (the prefix of a colliding name).
        names: the server's original tool names.
        reserved: names already taken elsewhere.

    Returns:
        One unique safe name per input name, none of them in ``reserved``; ``SERVER__TOOL`` for a
        collision, with ``_2``, ``_3``... when even that is taken.
    """
    taken = set(reserved)
    originals = list(names)
    plain = [safe_name(n) for n in originals]
    counts = collections.Counter(plain)
    exposed: list[str] = []
    for original, candidate in zip(originals, plain, strict=True):
        if candidate in taken or counts[candidate] > 1:
            candidate = safe_name(f"{server}__{original}")
            base, number = candidate, 2
            while candidate in taken:
                suffix = f"_{number}"
                candidate = base[: MAX_NAME_CHARS - len(suffix)] + suffix
                number += 1
        taken.add(candidate)
        exposed.append(candidate)
    return exposed


def input_schema(definition: dict[str, Any]) -> dict[str, Any]:
    """The tool's ``inputSchema``; an object schema without properties when it is missing."""
    schema = definition.get("inputSchema")
    if isinstance(schema, dict):
        return schema
    return {"type": "object", "properties": {}}


def is_read_only(definition: dict[str, Any]) -> bool:
    """Whether the server marked the tool ``annotations.readOnlyHint: true`` (a hint the user
    trusts by configuring the server)."""
    annotations = definition.get("annotations")
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


def _size(data: Any) -> str:
    """Approximate decoded size of base64 ``data``, e.g. ``1234 bytes``."""
    if not isinstance(data, str):
        return "size unknown"
    return f"{len(data) * 3 // 4 - data[-2:].count('=')} bytes"


def _describe(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType', 'unknown type')}, {_size(block.get('data'))}]"
    if kind == "resource_link":
        parts = [str(block.get("name") or ""), str(block.get("uri") or "")]
        if block.get("mimeType"):
            parts.append(f"({block['mimeType']})")
        if block.get("description"):
            parts.append(f"- {block['description']}")
        return "[resource link: " + " ".join(p for p in parts if p) + "]"
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            return "[resource]"
        uri = resource.get("uri", "")
        if isinstance(resource.get("text"), str):
            return f"[resource {uri}]\n{resource['text']}"
        mime = resource.get("mimeType", "unknown type")
        return f"[resource {uri}: {mime}, {_size(resource.get('blob'))}]"
    return f"[{kind} content]"


def _without_base64(value: Any, depth: int = 0) -> Any:
    """``value`` (``structuredContent``) with media and base64 described (module docstring)."""
    if depth > 200:
        raise RecursionError("structured content nested too deeply")
    if isinstance(value, dict):
        if value.get("type") in ("image", "audio") and "data" in value:
            return _describe(value)
        if isinstance(value.get("blob"), str):
            return f"[{value.get('mimeType', 'binary data')}, {_size(value['blob'])}]"
        return {key: _without_base64(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_base64(item, depth + 1) for item in value]
    if isinstance(value, str) and len(value) >= BASE64_CHARS and _BASE64.fullmatch(value):
        return f"[base64 data, {_size(value)}]"
    return value


def result_text(result: dict[str, Any]) -> tuple[str, bool]:
    """A ``tools/call`` result as (text, is_error) (rules: module docstring)."""
    content = result.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    parts = [_describe(b) for b in blocks]
    structured = result.get("structuredContent")
    if structured is not None and not any(b.get("type") == "text" for b in blocks):
        try:
            parts.append(json.dumps(_without_base64(structured), ensure_ascii=False))
        except (ValueError, TypeError, RecursionError):
            parts.append("[structured content nested too deeply to show]")
    text = "\n".join(parts)
    return (text if text else "(no content)"), result.get("isError") is True
