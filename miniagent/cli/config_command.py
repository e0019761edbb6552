"""``miniagent config show``: every option of ``run`` with the value it would take now, and
where that value comes from (a flag, an environment variable, a profile or the defaults of a
configuration file, with file and line, or the built-in default).

The values are resolved by parsing ``run``'s options exactly as ``run`` does (click's own
precedence and the ``--profile`` callback, ``config.apply_config``), so what is shown is what a
run gets; a secret is shown as ``***`` (``config.shown_value``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .config import META, Setting, config_files, option_keys, shown_value

__all__ = ["config_rows", "render_rows"]


def _source(ctx: Any, param: Any, given: dict[str, Setting]) -> str:
    origin = getattr(ctx.get_parameter_source(param.name), "name", "DEFAULT")
    if origin == "COMMANDLINE":
        return "flag"
    if origin == "ENVIRONMENT":
        names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or [])
        return "environment " + ", ".join(f"${name}" for name in names)
    if origin == "DEFAULT_MAP" and param.name in given:
        return given[param.name].source
    return "default"


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def config_rows(root: Any, args: list[str]) -> list[dict[str, Any]]:
    """One row per option of ``run``: ``{"key", "value", "source"}`` (secrets masked).

    Args:
        root: the click context of the ``miniagent`` group.
        args: options to parse as ``run`` would (``["--profile", "cron"]``).

    Raises:
        ConfigProblem: a configuration file cannot be used (``config.apply_config``).
        click's UsageError: an option value is refused.
    """
    run = root.command.commands["run"]
    ctx = run.make_context("run", list(args), parent=root)
    given: dict[str, Setting] = ctx.meta.get(META, {})
    rows = []
    for key, param in option_keys(run).items():
        value = ctx.params.get(param.name)
        shown = "***" if shown_value(key, value) == "***" else _plain(value)
        rows.append({"key": key, "value": shown, "source": _source(ctx, param, given)})
    profile = ctx.params.get("profile")
    rows.insert(0, {"key": "profile", "value": profile, "source": _source(ctx, _named(run, "profile"), {})})
    return rows


def _named(command: Any, name: str) -> Any:
    return next(param for param in command.params if param.name == name)


def render_rows(rows: list[dict[str, Any]], as_json: bool) -> str:
    """The rows as text (``key = value  # source``, TOML-like; unset options as comments) or,
    with ``as_json``, one JSON object per line."""
    if as_json:
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    files = ", ".join(f"{path}{'' if path.is_file() else ' (none)'}" for path in config_files())
    lines = [f"# files (lowest precedence first): {files}"]
    for row in rows:
        value, key, source = row["value"], row["key"], row["source"]
        if value is None or value == []:
            lines.append(f"# {key}: not set ({source})")
        else:
            text = value if value == "***" else json.dumps(value, ensure_ascii=False)
            lines.append(f"{key} = {text}  # {source}")
    return "\n".join(lines) + "\n"
