"""``load_mcp_config(path)``: the MCP server file of Claude Code and Claude Desktop.

Format (``.mcp.json`` of Claude Code, ``claude_desktop_config.json`` of Claude Desktop)::

    {"mcpServers": {
        "time":   {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "remote": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${API_TOKEN}"}}
    }}

- A server with ``command`` (``type`` absent or ``"stdio"``) is a ``StdioMCPServer``; optional
  ``args`` (list of strings), ``env`` (object of strings), ``cwd`` (relative to the file's folder).
- ``type`` ``"http"`` (or ``"streamable-http"``), or a ``url`` without ``command``, is an
  ``HTTPMCPServer``; optional ``headers`` (object of strings). ``type: "sse"`` (the transport the
  spec replaced in 2025-03-26) is refused with a clear error.
- ``${VAR}`` and ``${VAR:-default}`` are expanded from the environment in ``command``, ``args``,
  ``env``, ``cwd``, ``url`` and ``headers`` (as Claude Code does); a variable that is not set and
  has no default is an error naming it (never its value).
- ``"sandbox": "workspace"`` on a stdio server runs it confined by the kernel
  (``miniagent.process.sandbox``: writes only in its ``cwd`` and a private temporary folder, no
  network, secret folders unreadable); ``"none"`` (the default) runs it unconfined. Starting a
  sandboxed server where the kernel cannot confine it raises ``SandboxUnavailable``.
- ``oauth`` of an HTTP server (the object Claude Code reads, plus fields for what it keeps
  elsewhere): ``clientId``, ``callbackPort``, ``authServerMetadataUrl``, ``scopes`` (Claude
  Code's); ``clientSecret``, ``clientMetadataUrl``, ``grantType`` (``"authorization_code"`` or
  ``"client_credentials"``), ``tokenEndpointAuthMethod``, ``privateKeyFile`` (a PEM file for
  ``private_key_jwt``, relative to the file's folder), ``signingAlgorithm`` and
  ``tokenStore`` (a folder, or ``false`` to keep tokens in memory only). Strings are expanded
  as above. ``"oauth": false`` turns OAuth off; without ``oauth`` a server that asks for
  authorization gets the interactive login with dynamic registration.
- ``"disabled": true`` leaves a server out; other keys (``autoApprove``...) are ignored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._json import loads
from .._regular import open_regular
from ._errors import MCPError
from .remote import HTTPMCPServer
from .servers import MCPServerBase, StdioMCPServer

if TYPE_CHECKING:
    from .auth import OAuth

__all__ = ["load_mcp_config"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Problem(Exception):
    """Internal: one problem in the file, said in a sentence."""


def load_mcp_config(
    path: str | os.PathLike[str], *, roots: Sequence[str | os.PathLike[str]] | None = None
) -> dict[str, MCPServerBase]:
    """Read an ``{"mcpServers": {...}}`` file (format: module docstring).

    Args:
        path: the JSON file.
        roots: the folders every server is offered as roots (``roots/list``), e.g. the
            workspace; ``None``: the working folder.

    Returns:
        ``{name: server}`` in the file's order; the servers are not started.

    Raises:
        MCPError: kind ``config``: the file cannot be read (a FIFO or a device is refused at
            once, never waited on), is not JSON, has no ``mcpServers`` object, or a server's
            entry is wrong (the message names the file, the server and the field).
    """
    where = os.fspath(path)
    try:
        with open(open_regular(where), encoding="utf-8") as file:  # a FIFO is refused, never waited on
            document = loads(file.read())  # depth-safe (miniagent._json)
    except OSError as exc:
        raise MCPError(f"{where}: cannot read: {exc.strerror or exc}", kind="config") from None
    except ValueError as exc:
        raise MCPError(f"{where}: not JSON: {exc}", kind="config") from None
    entries = document.get("mcpServers") if isinstance(document, dict) else None
    if not isinstance(entries, dict):
        raise MCPError(f'{where}: expected an object with "mcpServers": {{...}}', kind="config")
    folder = os.path.dirname(os.path.realpath(where))
    servers: dict[str, MCPServerBase] = {}
    for name, entry in entries.items():
        try:
            server = _server(name, entry, folder, roots)
        except _Problem as problem:
            raise MCPError(f"{where}: server {name!r}: {problem}", server=name, kind="config") from None
        if server is not None:
            servers[name] = server
    return servers


def _server(
    name: str, entry: Any, folder: str, roots: Sequence[str | os.PathLike[str]] | None
) -> MCPServerBase | None:
    if not isinstance(entry, dict):
        raise _Problem("expected an object")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type")
    if kind == "sse":
        raise _Problem(
            'type "sse" (HTTP+SSE, replaced in protocol 2025-03-26) is not supported; '
            'use the server\'s streamable HTTP endpoint with type "http"'
        )
    if kind in ("http", "streamable-http") or (kind is None and "url" in entry and "command" not in entry):
        url = _expand(_string(entry, "url"), "url")
        headers = {k: _expand(v, f"headers.{k}") for k, v in _strings(entry, "headers").items()}
        try:
            auth = _oauth(entry.get("oauth"), folder)
            return HTTPMCPServer(url, headers, name=name, auth=auth, roots=roots)
        except ValueError as exc:
            raise _Problem(str(exc)) from None
    if kind not in (None, "stdio"):
        raise _Problem(f'unknown type {kind!r} (expected "stdio" or "http")')
    command = _expand(_string(entry, "command"), "command")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _Problem('"args" must be a list of strings')
    env = {k: _expand(v, f"env.{k}") for k, v in _strings(entry, "env").items()}
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _Problem('"cwd" must be a string')
    folder_of_server = None if cwd is None else os.path.join(folder, _expand(cwd, "cwd"))
    sandbox = entry.get("sandbox", "none")
    if sandbox not in ("none", "workspace"):
        raise _Problem('"sandbox" must be "none" or "workspace"')
    return StdioMCPServer(
        command,
        [_expand(a, f"args[{i}]") for i, a in enumerate(args)],
        env,
        folder_of_server,
        name=name,
        sandbox=sandbox,
        roots=roots,
    )


_OAUTH_FIELDS = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "clientMetadataUrl": "client_metadata_url",
    "scopes": "scopes",
    "authServerMetadataUrl": "auth_server_metadata_url",
    "grantType": "grant",
    "tokenEndpointAuthMethod": "token_endpoint_auth_method",
    "signingAlgorithm": "signing_algorithm",
}


def _oauth(value: Any, folder: str) -> OAuth | None:
    """The ``oauth`` object of an HTTP server as ``OAuth`` settings (fields: module docstring)."""
    from .auth import OAuth  # here: a file of stdio servers only never builds the dataclass

    if value is False:
        return None
    if value is None:
        return OAuth()
    if not isinstance(value, dict):
        raise _Problem('"oauth" must be an object or false')
    options: dict[str, Any] = {}
    for key, item in value.items():
        if key in _OAUTH_FIELDS:
            if not isinstance(item, str) or not item:
                raise _Problem(f"oauth.{key} must be a non-empty string")
            options[_OAUTH_FIELDS[key]] = _expand(item, f"oauth.{key}")
        elif key == "callbackPort":
            if not isinstance(item, int) or isinstance(item, bool) or not 0 < item < 65536:
                raise _Problem("oauth.callbackPort must be a port number (1 to 65535)")
            options["callback_port"] = item
        elif key == "privateKeyFile":
            options["private_key"] = _read_key(item, folder)
        elif key == "tokenStore":
            if item is not False and not isinstance(item, str):
                raise _Problem("oauth.tokenStore must be a folder or false")
            store = None if item is False else os.path.join(folder, _expand(item, "oauth.tokenStore"))
            options["store"] = store
        else:
            raise _Problem(f"unknown field oauth.{key}")
    try:
        return OAuth(**options)
    except ValueError as exc:
        raise _Problem(f"oauth: {exc}") from None


def _read_key(item: Any, folder: str) -> str:
    if not isinstance(item, str) or not item:
        raise _Problem("oauth.privateKeyFile must be a non-empty string")
    path = os.path.join(folder, _expand(item, "oauth.privateKeyFile"))
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as exc:
        raise _Problem(f"oauth.privateKeyFile {path}: cannot read: {exc.strerror}") from None


def _string(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise _Problem(f"{key!r} must be a non-empty string")
    return value


def _strings(entry: dict[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _Problem(f"{key!r} must be an object of strings")
    return value


def _expand(text: str, field: str) -> str:
    """``text`` with ``${VAR}`` / ``${VAR:-default}`` replaced from ``os.environ``."""

    def value(match: re.Match[str]) -> str:
        variable, default = match.group(1), match.group(2)
        found = os.environ.get(variable)
        if found is not None and (found or default is None):
            return found
        if default is not None:
            return default
        raise _Problem(f"{field} uses ${{{variable}}}, which is not set")

    return _VARIABLE.sub(value, text)
