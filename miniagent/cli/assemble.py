"""What a CLI command's runs are made of: the built-in and MCP tools, the approval policy, the
system prompt and the model client, built once per command from its ``Options``.

Invariants:

- Each MCP server is appended to the caller's list before it starts, so the caller can stop
  every started server whatever fails or is interrupted later.
- Every tool result has the one cap, ``tools.tool_output_chars(--context-max-chars)``: built-in
  and MCP tools alike.
- The approval mode is chosen here (``defaults.resolve_approval``) and turned into a policy by
  ``approval.policy_for``; nothing else in the CLI looks at the mode's name.
- The toolbox, MCP and providers are imported when a command first needs them (never when the CLI
  is imported), so ``--help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..approval import ApprovalPolicy, policy_for
from ..tools import Tool, tool_output_chars
from .checks import UsageProblem
from .defaults import default_system_prompt, resolve_approval
from .options import prices_of
from .terminal import is_terminal

if TYPE_CHECKING:
    from ..mcp import MCPServerBase
    from ..model import ModelClient
    from .display import Display
    from .options import Options

__all__ = ["Parts", "approval_policy", "assemble", "check_price", "create_client", "mcp_tools"]


@dataclass(frozen=True)
class Parts:
    """What every run of one command uses.

    Args:
        client: the model client (the caller closes it).
        tools: the built-in tools, then the MCP servers' tools (in ``--mcp-config`` order).
        policy: the approval policy (``--approve``, or its default).
        system: the system prompt (``--system``, or one naming the workspace and the tools).
    """

    client: ModelClient
    tools: list[Tool]
    policy: ApprovalPolicy
    system: str


def assemble(
    options: Options,
    provider: str,
    display: Display,
    servers: list[MCPServerBase],
    *,
    continuing: bool = False,
) -> Parts:
    """Create the tools (starting the ``--mcp-config`` servers), the approval policy, the system
    prompt and the model client (a local model starts here). Blocks: the runner calls it in a
    thread it can abandon.

    Args:
        options: the command's options.
        provider: the provider to create the client for (``defaults.resolve_provider``).
        display: shows the progress of slow steps.
        servers: each MCP server is appended here before it starts (the caller stops them).
        continuing: ``run --continue`` (the default approval mode is then ``defer``).

    Raises:
        MCPError: an MCP server could not be started or listed (the error names it).
        UsageProblem: the library refused a setting of the client (e.g. a proxy variable).
        MiniagentError, OSError, ImportError: the client could not be created.
    """
    from ..toolbox import default_tools

    limit = tool_output_chars(options.context_max_chars)
    tools = default_tools(options.folder, max_output_chars=limit)
    tools += mcp_tools(options, display, servers, reserved=[t.name for t in tools])
    policy = approval_policy(options, tools, continuing=continuing)
    system = options.system or default_system_prompt(options.folder, tools)
    if provider == "local":
        display.progress("starting the local model")
    return Parts(create_client(options, provider), tools, policy, system)


def approval_policy(options: Options, tools: list[Tool], *, continuing: bool = False) -> ApprovalPolicy:
    """The policy of ``--approve`` (default: ``ask`` when stdin is a terminal, else
    ``read-only``, or ``defer`` when ``continuing``); a read-only refusal says whether the user
    chose it or no one can be asked."""
    mode = resolve_approval(options.approve, is_terminal(sys.stdin), continuing=continuing)
    chosen = options.approve == "read-only"  # else the default without a terminal
    why = "read-only tools were chosen" if chosen else "this run is non-interactive"
    return policy_for(mode, tools, why, remedy="ask the user to re-run with --approve all")


def mcp_tools(
    options: Options, display: Display, servers: list[MCPServerBase], *, reserved: list[str]
) -> list[Tool]:
    """Start the ``--mcp-config`` servers (in order) and return their tools; a name that collides
    with ``reserved`` or another server's becomes ``SERVER__TOOL``. Their results are capped like
    the built-in tools' (``tool_output_chars``).

    Raises:
        MCPError: a server could not be started or listed (the error names it).
        KeyboardInterrupt: Ctrl-C while a server was starting (the caller stops ``servers``).
    """
    if not options.mcp_config:
        return []
    from ..mcp import load_mcp_config
    from ..mcp import mcp_tools as tools_of

    started = len(servers)
    for path in options.mcp_config:
        for name, server in load_mcp_config(path).items():
            server.max_result_chars = tool_output_chars(options.context_max_chars)
            servers.append(server)
            display.progress(f"starting MCP server {name}")
            server.start()
    display.idle()
    return tools_of(servers[started:], reserved=reserved)


def create_client(options: Options, provider: str) -> ModelClient:
    """The model client of ``provider`` with the options' model, URL, limits and key.

    ``MINIAGENT_API_KEY``, when set, is the key sent to any server (also one on localhost, where
    the provider's usual key variable is never sent); never to the local model.

    Raises:
        UsageProblem: the library refused a setting (a ``ValueError``, e.g. a proxy variable).
        MiniagentError, OSError, ImportError: the client could not be created.
    """
    from ..providers import create_client as create

    api_key = os.environ.get("MINIAGENT_API_KEY") or None
    prices = prices_of(options.prices)
    try:
        return create(
            provider,
            model=options.model,
            base_url=options.base_url,
            api_key=None if provider == "local" else api_key,
            stream_timeout=options.stream_timeout,
            max_tokens=options.max_output_tokens,
            **({} if prices is None else {"prices": prices}),
        )
    except ValueError as error:  # a setting the library refuses (e.g. a proxy variable): usage
        raise UsageProblem(str(error)) from None


def check_price(options: Options, client: ModelClient) -> None:
    """``--max-cost`` needs the price of the model: refuse it now, before any request, when the
    client says it cannot price its model (``can_price()``).

    Raises:
        UsageProblem: the cost of this model cannot be known.
    """
    can_price = getattr(client, "can_price", None)
    if options.max_cost is None or not callable(can_price) or can_price():
        return
    from ..usage import price_table_installed

    model = getattr(client, "model", None) or options.model
    if price_table_installed():
        why = f"the price table does not know the model {model!r}" if model else "no price is known"
        remedy = "give its prices with --prices INPUT,OUTPUT (US dollars per million tokens)"
    else:
        why = "the price table is not installed"
        remedy = "install it (pip install 'miniagent[cost]'), give --prices INPUT,OUTPUT"
    raise UsageProblem(
        f"--max-cost {options.max_cost:g} needs the price of the model, and {why}: {remedy}, "
        "or use --max-total-tokens"
    )
