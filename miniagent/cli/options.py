"""The options shared by ``run`` and ``chat``: one dataclass field per option.

Adding an option is a one-place change: add a field to ``Options`` whose annotation carries its
``typer.Option`` (flag, help, checks) and whose default is the option's default. ``with_options``
gives every command that field as a parameter (typer reads the command's signature) and hands the
command one ``Options`` value built from what was parsed. Code that needs the option reads
``options.<field>``.

Invariants: ``Options.workspace`` is an absolute, resolved folder after construction (default: the
current folder); an option naming a file or folder is checked while parsing (``option_files``: a
FIFO, device or socket is a usage error at once, never opened); option names are the field names
with ``_`` spelled ``-``, unless the ``typer.Option`` names them.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer

from .._catalogue import CHOSEN_BY_KEY, FALLBACK, FOR_BASE_URL, PROVIDERS, check_provider, provider
from ..approval import APPROVAL_MODES, CommandRules
from ..usage import PRICE_KEYS
from .defaults import (
    DEFAULT_CHAT_COMPACT_AT,
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MAX_REPEATS,
    DEFAULT_MAX_TURNS,
    EXIT_BUDGET,
    EXIT_DEFERRED,
    EXIT_ERROR,
    EXIT_MAX_TURNS,
    EXIT_NO_PROGRESS,
    EXIT_TIMEOUT,
    MIN_CONTEXT_CHARS,
)
from .option_files import folder, regular_files

__all__ = ["Options", "with_options"]


def _check_provider(value: Optional[str]) -> Optional[str]:  # noqa: UP045 (typer reads it)
    if value in (None, ""):
        return None
    try:
        return check_provider(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(PROVIDERS)}") from None


def _provider_choice() -> str:
    """How a provider is chosen when none is named, read from the catalogue's rows."""
    steps = [
        f"{name} if {provider(name).key_env} is set"
        + (" or --base-url is given" if name == FOR_BASE_URL else "")
        for name in CHOSEN_BY_KEY
    ]
    if FOR_BASE_URL not in CHOSEN_BY_KEY:
        steps.append(f"{FOR_BASE_URL} if --base-url is given")
    return f"Default: {', else '.join(steps)}, else the embedded {FALLBACK} model."


def _check_approve(value: Optional[str]) -> Optional[str]:  # noqa: UP045
    if value is not None and value not in APPROVAL_MODES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(APPROVAL_MODES)}")
    return value


def _check_max_repeats(value: int) -> int:
    if value == 1:
        raise typer.BadParameter("1 would stop every run that calls a tool: use 0 (never) or at least 2")
    return value


def prices_of(value: str | None) -> dict[str, float] | None:
    """``--prices INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]]`` as ``create_client``'s ``prices``
    (US dollars per million tokens), or ``None`` when not given.

    Raises:
        typer.BadParameter: not two to four numbers >= 0 separated by commas.
    """
    if value in (None, ""):
        return None
    parts = [part.strip() for part in value.split(",")]
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        numbers = []
    if not 2 <= len(numbers) <= len(PRICE_KEYS) or not all(0 <= n < float("inf") for n in numbers):
        raise typer.BadParameter(
            f"{value!r}: expected INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]], numbers >= 0 "
            "(US dollars per million tokens)"
        )
    return dict(zip(PRICE_KEYS, numbers, strict=False))


def _check_prices(value: Optional[str]) -> Optional[str]:  # noqa: UP045
    prices_of(value)
    return value


def _check_rules(kind: str) -> Callable[[Optional[list[str]]], Optional[list[str]]]:  # noqa: UP045
    """A callback that refuses command rules that cannot be read (``approval.CommandRules``)."""

    def check(values: Optional[list[str]]) -> Optional[list[str]]:  # noqa: UP045
        for rule in values or ():
            try:
                CommandRules([rule] if kind == "allow" else [], [rule] if kind == "deny" else [])
            except ValueError as error:
                raise typer.BadParameter(str(error)) from None
        return values

    return check


def _load_config(ctx: typer.Context, value: Optional[str]) -> Optional[str]:  # noqa: UP045
    """``--profile``'s callback (eager: before every other option): the configuration files'
    values become the options' defaults (``config.apply_config``)."""
    from .config import apply_config

    apply_config(ctx, value)
    return value


_SANDBOX_MODES = ("none", "workspace")  # process.sandbox.SANDBOX_MODES (not imported: ctypes, start-up)


def _check_sandbox(value: str) -> str:
    if value not in _SANDBOX_MODES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(_SANDBOX_MODES)}")
    return value


@dataclass
class Options:
    """Every option of ``run`` and ``chat`` as parsed (see each field's ``help``)."""

    provider: Annotated[
        Optional[str],  # noqa: UP045 (typer reads the annotations)
        typer.Option(
            "--provider",
            envvar="MINIAGENT_PROVIDER",
            metavar="|".join(PROVIDERS),
            callback=_check_provider,
            help=f"Model provider. {_provider_choice()} "
            "MINIAGENT_API_KEY, when set, is the key sent to any server.",
        ),
    ] = None
    model: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--model", envvar="MINIAGENT_MODEL", help="Model name (local: a .gguf path)."),
    ] = None
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base-url", envvar="MINIAGENT_BASE_URL", help="API base URL of the provider."),
    ] = None
    max_turns: Annotated[
        int,
        typer.Option(
            "--max-turns", min=1, help=f"Most model requests per run (exit {EXIT_MAX_TURNS} when reached)."
        ),
    ] = DEFAULT_MAX_TURNS
    session: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--session",
            dir_okay=False,
            callback=regular_files,
            help="JSONL session file to resume and append to.",
        ),
    ] = None
    context_max_chars: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--context-max-chars",
            metavar="N",
            help=f"Character budget of the context sent to the model (at least {MIN_CONTEXT_CHARS}).",
        ),
    ] = None
    workspace: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--workspace",
            exists=True,
            file_okay=False,
            callback=folder,
            help="Folder the tools work in. Default: current folder.",
        ),
    ] = None
    approve: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--approve",
            metavar="|".join(APPROVAL_MODES),
            callback=_check_approve,
            help="Tool approval. Default: ask when stdin is a terminal, else read-only (which also runs "
            "read-only commands such as ls, cat, wc, grep on workspace paths; defer with --continue). "
            f"defer: calls that may change something wait (exit {EXIT_DEFERRED}); decide with "
            "miniagent session approve/deny, then run --session PATH --continue.",
        ),
    ] = None
    allow_command: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--allow-command",
            metavar="PATTERN",
            callback=_check_rules("allow"),
            help="Let run_command run lines whose every simple command matches PATTERN, words read "
            "like a command ('git status', 'pytest *': a last * matches any further words), in every "
            "approval mode. Repeatable.",
        ),
    ] = None
    deny_command: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--deny-command",
            metavar="PATTERN",
            callback=_check_rules("deny"),
            help="Refuse run_command lines in which a command matches PATTERN (its words in order, "
            "'rm *'), in every approval mode, --approve all too. Repeatable.",
        ),
    ] = None
    sandbox: Annotated[
        str,
        typer.Option(
            "--sandbox",
            metavar="|".join(_SANDBOX_MODES),
            callback=_check_sandbox,
            help="workspace: run commands and grep confined by the kernel (Linux Landlock): writes only "
            "in the workspace and a private TMPDIR, no network, no secret folders such as ~/.ssh. "
            "Refused (exit 64) where the kernel cannot confine.",
        ),
    ] = "none"
    system: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--system", help="System prompt. Default: one naming the workspace and tools."),
    ] = None
    json: Annotated[
        bool, typer.Option("--json", help="Write one JSON object per message and a final result line.")
    ] = False
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs on stderr.")] = False
    timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--timeout",
            min=0.001,
            metavar="SECONDS",
            help=f"Cancel a run that is not done after SECONDS (exit {EXIT_TIMEOUT}); its calls are closed "
            "and the session stays valid.",
        ),
    ] = None
    max_total_tokens: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--max-total-tokens",
            min=1,
            metavar="N",
            help="Stop before a model request once the run used N tokens "
            f"(input + output; exit {EXIT_BUDGET}).",
        ),
    ] = None
    prices: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--prices",
            metavar="INPUT,OUTPUT",
            callback=_check_prices,
            help="The model's prices in US dollars per million tokens (input, output[, cache "
            "read[, cache write]]), for the cost and --max-cost when the price table does not "
            "know the model.",
        ),
    ] = None
    max_cost: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--max-cost",
            min=0.0,
            metavar="USD",
            help=f"Stop before a model request once the run cost USD dollars (exit {EXIT_BUDGET}); "
            "refused when the model's price is unknown.",
        ),
    ] = None
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="Log what happens on stderr (-v: requests, tools; -vv: debug).",
        ),
    ] = 0
    log_file: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--log-file",
            dir_okay=False,
            metavar="PATH",
            callback=regular_files,
            help="Append debug logs to PATH.",
        ),
    ] = None
    mcp_config: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(
            "--mcp-config",
            exists=True,
            dir_okay=False,
            metavar="FILE",
            callback=regular_files,
            help='MCP servers whose tools the model may use: a {"mcpServers": {...}} file (the '
            "format of Claude Code's .mcp.json and Claude Desktop). Repeatable.",
        ),
    ] = None

    compact_at: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--compact-at",
            min=0,
            metavar="TOKENS",
            help="Before a model request that would reach TOKENS input tokens, replace the older "
            "messages, in what is sent, by a summary the model writes (the session keeps every "
            "message); 0: never. Default: run never; chat at "
            f"{DEFAULT_CHAT_COMPACT_AT:,} (the embedded model: three quarters of its context).",
        ),
    ] = None
    max_repeats: Annotated[
        int,
        typer.Option(
            "--max-repeats",
            min=0,
            metavar="N",
            callback=_check_max_repeats,
            help="Stop before a model request once the same tool call got the same result N times "
            f"in a row (exit {EXIT_NO_PROGRESS}); 0: never. Tools marked repeatable (polls) never count.",
        ),
    ] = DEFAULT_MAX_REPEATS

    max_output_tokens: Annotated[
        int,
        typer.Option(
            "--max-output-tokens",
            envvar="MINIAGENT_MAX_OUTPUT_TOKENS",
            min=1,
            metavar="N",
            help="Most tokens the model may write in one reply; a reply cut at the limit is an "
            f"error (exit {EXIT_ERROR}), not an answer.",
        ),
    ] = DEFAULT_MAX_OUTPUT_TOKENS
    stream_timeout: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--stream-timeout",
            min=0.001,
            metavar="SECONDS",
            help="Most seconds one streamed reply may take from the request to its end. Default: no limit.",
        ),
    ] = None
    reasoning_effort: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--reasoning-effort",
            metavar="none|minimal|low|medium|high|xhigh",
            help="How much a reasoning model thinks (openai-responses and azure). Default: the model's.",
        ),
    ] = None
    api: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--api",
            metavar="chat|responses",
            help="Which API of an azure resource: chat completions (default) or the Responses API.",
        ),
    ] = None

    profile: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--profile",
            envvar="MINIAGENT_PROFILE",
            metavar="NAME",
            is_eager=True,
            callback=_load_config,
            help="Take the option values of [profiles.NAME] of the configuration files "
            "(./miniagent.toml over ~/.config/miniagent/config.toml; their top level applies "
            "without a profile); flags and environment variables win. See: miniagent config show.",
        ),
    ] = None

    def __post_init__(self) -> None:
        self.workspace = (self.workspace or Path.cwd()).resolve()

    @property
    def folder(self) -> Path:
        """The workspace folder (absolute, resolved)."""
        assert self.workspace is not None  # set by __post_init__
        return self.workspace


def _option_parameters() -> list[inspect.Parameter]:
    hints = typing.get_type_hints(Options, include_extras=True)
    return [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
        for f in fields(Options)
    ]


_T = TypeVar("_T")


def with_options(command: Callable[..., _T]) -> Callable[..., _T]:
    """Give ``command`` every ``Options`` field as a typer parameter; it receives ``options=``.

    Args:
        command: a function whose parameters are its own typer arguments plus ``options``
            (keyword, an ``Options``). Its own parameters are declared as usual.

    Returns:
        A function for ``app.command()`` whose signature is ``command``'s own parameters followed
        by one keyword parameter per option (named like the field; the flag comes from the
        field's ``typer.Option``).

    Raises:
        TypeError: one of ``command``'s own parameters has the name of an option.
    """
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "options"]
    names = {f.name for f in fields(Options)}
    clash = names.intersection(p.name for p in own)
    if clash:
        raise TypeError(f"{command.__name__}: parameters named like options: {sorted(clash)}")
    parameters = own + _option_parameters()

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> _T:
        values = {name: kwargs.pop(name) for name in names if name in kwargs}
        return command(**kwargs, options=Options(**values))

    del wrapper.__wrapped__  # typer must see the new signature, not the wrapped function's
    wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper
