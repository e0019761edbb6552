"""What a CLI command's runs are made of: the built-in and MCP tools, the approval policy, the
system prompt and the model client, built once per command from its ``Options``.

Invariants:

- Each MCP server is appended to the caller's list before it starts, so the caller can stop
  every started server whatever fails or is interrupted later.
- Every tool result has the one cap, ``tools.tool_output_chars(--context-max-chars)``: built-in
  and MCP tools alike.
- The approval mode is chosen here (``defaults.resolve_approval``) and turned into a policy by
  ``approval.policy_for``, with ``--allow-command`` / ``--deny-command`` and the workspace (the
  read-only command set checks its paths); nothing else in the CLI looks at the mode's name.
- ``--sandbox workspace`` where the kernel cannot confine is a usage problem (one line, exit 64),
  raised before any server or model starts: nothing runs unconfined instead.
- The toolbox, MCP and providers are imported when a command first needs them (never when the CLI
  is imported), so ``--help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..approval import ApprovalPolicy, policy_for
from ..compaction import Compaction
from ..tools import Tool, tool_output_chars
from .checks import UsageProblem
from .defaults import compact_at, default_system_prompt, resolve_approval
from .options import prices_of
from .terminal import is_terminal

if TYPE_CHECKING:
    from ..mcp import MCPServerBase
    from ..model import ModelClient
    from .display import Display
    from .options import Options

__all__ = [
    "Parts",
    "approval_policy",
    "assemble",
    "check_price",
    "compaction_for",
    "create_client",
    "mcp_tools",
]


@dataclass(frozen=True)
class Parts:
    """What every run of one command uses.

    Args:
        client: the model client (the caller closes it).
        tools: the built-in tools, then the MCP servers' tools (in ``--mcp-config`` order).
        policy: the approval policy (``--approve``, or its default).
        system: the system prompt (``--system``, or one naming the workspace and the tools).
        compaction: ``--compact-at`` (or ``chat``'s default) as ``run_agent``'s ``compaction``.
    """

    client: ModelClient
    tools: list[Tool]
    policy: ApprovalPolicy
    system: str
    compaction: Compaction | None = None


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
        UsageProblem: the library refused a setting of the client (e.g. a proxy variable), or
            ``--sandbox workspace`` (or an MCP server's ``"sandbox"``) where the kernel cannot
            confine.
        MiniagentError, OSError, ImportError: the client could not be created.
    """
    from ..errors import SandboxUnavailable
    from ..toolbox import default_tools

    limit = tool_output_chars(options.context_max_chars)
    try:
        tools = default_tools(options.folder, max_output_chars=limit, sandbox=options.sandbox)
        tools += mcp_tools(options, display, servers, reserved=[t.name for t in tools])
    except SandboxUnavailable as error:
        raise UsageProblem(f"cannot confine commands here: {error}") from None
    policy = approval_policy(options, tools, continuing=continuing)
    system = options.system or default_system_prompt(options.folder, tools)
    if provider == "local":
        display.progress("starting the local model")
    client = create_client(options, provider)
    return Parts(client, tools, policy, system, compaction_for(options, client, chat=display.chat))


def compaction_for(options: Options, client: ModelClient, *, chat: bool) -> Compaction | None:
    """``--compact-at`` (``defaults.compact_at``: ``chat`` compacts by default, at three
    quarters of the embedded model's context size when the client is one) as a ``Compaction``."""
    size = getattr(getattr(client, "server", None), "n_ctx", None)  # the embedded model's
    tokens = compact_at(
        options.compact_at,
        chat=chat,
        context_size=size if isinstance(size, int) and size > 0 else None,
        max_output_tokens=options.max_output_tokens,
    )
    return Compaction(tokens) if tokens is not None else None


def approval_policy(options: Options, tools: list[Tool], *, continuing: bool = False) -> ApprovalPolicy:
    """The policy of ``--approve`` (default: ``ask`` when stdin is a terminal, else
    ``read-only``, or ``defer`` when ``continuing``) with ``--allow-command`` / ``--deny-command``
    in front; a read-only refusal says whether the user chose it or no one can be asked.
    ``read-only`` also runs the read-only command set (``approval.READ_ONLY_COMMANDS``) on
    workspace paths."""
    from ..toolbox import Workspace

    mode = resolve_approval(options.approve, is_terminal(sys.stdin), continuing=continuing)
    chosen = options.approve == "read-only"  # else the default without a terminal
    why = "read-only tools were chosen" if chosen else "this run is non-interactive"
    return policy_for(
        mode,
        tools,
        why,
        remedy="ask the user to re-run with --approve all or --allow-command PATTERN",
        allow_commands=options.allow_command or (),
        deny_commands=options.deny_command or (),
        workspace=Workspace(options.folder),
    )


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
        for name, server in load_mcp_config(path, roots=[options.folder]).items():
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
            **_provider_options(options, provider),
        )
    except ValueError as error:  # a setting the library refuses (e.g. a proxy variable): usage
        raise UsageProblem(str(error)) from None


_TAKEN_BY = {"reasoning_effort": ("openai-responses", "azure"), "api": ("azure",)}
"""The options only some providers take, and those providers."""


def _provider_options(options: Options, provider: str) -> dict[str, Any]:
    """``--reasoning-effort`` and ``--api`` as ``create_client`` options, when given.

    Raises:
        UsageProblem: one was given for a provider that takes no such option.
    """
    given = {name: getattr(options, name) for name in _TAKEN_BY if getattr(options, name) is not None}
    for name in given:
        if provider not in _TAKEN_BY[name]:
            flag = "--" + name.replace("_", "-")
            raise UsageProblem(f"{flag} is for --provider {' or '.join(_TAKEN_BY[name])}, not {provider}")
    return given


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
