"""miniagent's MCP client driven by the official conformance suite
(``@modelcontextprotocol/conformance``): ``conformance_client.py URL``, with the scenario in
``MCP_CONFORMANCE_SCENARIO`` and its credentials (auth scenarios) in ``MCP_CONFORMANCE_CONTEXT``
(a JSON object). Exit status 0 when the client did what the scenario asks.

Every scenario: connect, list the tools, call the one the scenario names (or the first, with
``{}``), close. The auth scenarios run the authorization code flow with a redirect handler that
fetches the authorization URL itself (no browser) and takes the code from the redirect, or
``client_credentials`` where the scenario says so.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from miniagent.mcp import HTTPMCPServer

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


def accept_with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """Accept every elicitation with an empty form: the client fills in the defaults."""
    return {"action": "accept", "content": {}}


def auth_for(scenario: str, context: dict[str, Any]) -> Any:
    """The ``OAuth`` settings of an auth scenario (``None`` for the others)."""
    if not scenario.startswith("auth/"):
        return None
    from miniagent.mcp.auth import OAuth, fetch_redirect

    if scenario == "auth/cross-app-access-complete-flow":
        from miniagent.mcp.auth import id_jag_exchange

        exchange = id_jag_exchange(
            context["idp_token_endpoint"], context["idp_id_token"], context["idp_client_id"]
        )
        return OAuth(
            grant="jwt_bearer",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            assertion=exchange,
            store=None,
        )
    if scenario in ("auth/client-credentials-jwt", "auth/client-credentials-basic"):
        return OAuth(
            grant="client_credentials",
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm"),
            store=None,
        )
    return OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url="https://conformance-test.local/client-metadata.json",
        redirect_uri="http://localhost:3000/callback",
        open_url=fetch_redirect,
        store=None,
    )


def main() -> int:
    """Run the scenario named in the environment against ``sys.argv[1]``."""
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    url = sys.argv[1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    options: dict[str, Any] = {"name": "conformance", "timeout": 20, "startup_timeout": 20}
    auth = auth_for(scenario, context)
    if auth is not None:
        options["auth"] = auth
    with HTTPMCPServer(url, elicitation=accept_with_defaults, **options) as server:
        tools = server.list_tools()
        name, arguments = CALLS.get(scenario, (tools[0]["name"] if tools else "", {}))
        if name:
            result = server.call_tool(name, arguments)
            print(result.content)
    return 0


if __name__ == "__main__":
    sys.exit(main())
