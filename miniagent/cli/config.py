"""Configuration files of the CLI: option values kept in TOML, by default and per named profile.

Two files are read, when they exist: the user's ``$XDG_CONFIG_HOME/miniagent/config.toml``
(``~/.config/miniagent/config.toml``) and the project's ``./miniagent.toml`` (the current
folder). Each holds option values at its top level (the defaults) and named profiles in
``[profiles.NAME]`` tables::

    max-turns = 8

    [profiles.nightly]
    approve = "read-only"
    timeout = 600

Invariants:

- The keys are derived from the commands themselves: every long option of ``run`` and ``chat``
  (click's parameters, so a new option gets its key without a change here) spelled as its flag
  without the leading dashes (``max-turns``, ``base-url``). Only that spelling is accepted;
  ``--profile`` and ``--help`` have no key.
- Precedence, for each option: the flag, then its environment variable, then the profile
  (``--profile NAME`` / ``MINIAGENT_PROFILE``), then the files' defaults, then the built-in
  default. Flag and environment over the file is click's own order for ``default_map``, which is
  how the values reach every option (one mechanism). Between the two files, the project's value
  wins over the user's at the same level (its profile over the user's profile, its defaults over
  the user's defaults); a profile may be defined in either file, or in both.
- Every value of the files' defaults and of the chosen profile is checked when the command
  starts, through the option's own click type and callback (the same checks as its flag), even
  when a flag overrides it. An unknown key, a value of the wrong TOML type, a value the option
  refuses, a file that is not TOML or an unknown profile is ``ConfigProblem`` (a ``UsageProblem``:
  exit 64) naming the file and the line. The keys of the other profiles are checked too, their
  values only when chosen.
- A secret (a key whose name says it holds one: ``is_secret_name``; a URL with a password) is
  accepted only from a private file: mode ``0600`` or stricter, owned by this user. Error
  messages and ``config show`` never repeat a secret.
- A file owned by another user (root's excepted) or writable by every user is refused: its
  values would apply to the commands of whoever starts one in its folder.
- Paths: ``~`` is expanded; a relative path is relative to the current folder, as on the
  command line.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._secret_names import is_secret_name
from .problems import UsageProblem

if TYPE_CHECKING:  # the click typer uses: its own copy in typer >= 0.26, else click
    from click import Option

__all__ = [
    "PROFILE_ENV",
    "PROJECT_FILE",
    "ConfigProblem",
    "Setting",
    "apply_config",
    "config_files",
    "is_secret_setting",
    "option_keys",
    "shown_value",
    "user_config_path",
]

PROFILE_ENV = "MINIAGENT_PROFILE"
PROJECT_FILE = "miniagent.toml"
NO_KEY = frozenset({"help", "profile", "continue"})
"""Options that are no setting: ``--continue`` is what one run does (in a file, every run with a
prompt failed, exit 64), ``--profile`` chooses the files' table."""
META = "miniagent.config"  # ctx.meta key: {param name: Setting} of what the files gave
_BARE = r"[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'"
_KEY_LINE = rf"^\s*((?:{_BARE})(?:\s*\.\s*(?:{_BARE}))*)\s*="  # compiled on a parse only (re caches)
_TABLE_LINE = rf"^\s*\[\s*((?:{_BARE})(?:\s*\.\s*(?:{_BARE}))*)\s*\]"


class ConfigProblem(UsageProblem):
    """A configuration file cannot be used (exit 64); the message names the file and line."""


class Setting:
    """One option value from a configuration file (a plain class: a dataclass would cost a
    one-shot run about a millisecond to create).

    Args:
        key: the key (``max-turns``).
        value: the TOML value (``~`` of a path expanded).
        file: the file it came from.
        line: its line number (1-based), or ``None`` when it could not be located.
        profile: the profile it belongs to, or ``None`` for the file's defaults.
    """

    __slots__ = ("file", "key", "line", "profile", "value")

    def __init__(self, key: str, value: Any, file: Path, line: int | None, profile: str | None) -> None:
        self.key, self.value, self.file, self.line, self.profile = key, value, file, line, profile

    def __repr__(self) -> str:
        return f"Setting({self.key!r}, {self.where})"

    @property
    def where(self) -> str:
        """``FILE:LINE`` (``FILE`` when the line is unknown)."""
        return f"{self.file}:{self.line}" if self.line else str(self.file)

    @property
    def source(self) -> str:
        """``profile NAME (FILE:LINE)`` or ``defaults (FILE:LINE)``, for ``config show``."""
        level = f"profile {self.profile}" if self.profile else "defaults"
        return f"{level} ({self.where})"


class _File:
    """A configuration file read: its path, its data, the line of each key, whether it is private."""

    __slots__ = ("data", "lines", "path", "private")

    def __init__(
        self, path: Path, data: dict[str, Any], lines: dict[tuple[str, ...], int], private: bool
    ) -> None:
        self.path, self.data, self.lines, self.private = path, data, lines, private


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The user's file: ``$XDG_CONFIG_HOME/miniagent/config.toml`` (``XDG_CONFIG_HOME``
    defaults to ``~/.config``), the counterpart of the state folder of ``defaults.session_folder``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "miniagent" / "config.toml"


def config_files(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> list[Path]:
    """The files read, lowest precedence first: the user's, then ``./miniagent.toml``."""
    return [user_config_path(environ), (cwd or Path.cwd()) / PROJECT_FILE]


def option_keys(command: Any) -> dict[str, Option]:
    """Every key of ``command``: its long options without the dashes, to the option."""
    keys: dict[str, Option] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        longs = [opt[2:] for opt in param.opts if opt.startswith("--")]
        if longs and longs[0] not in NO_KEY:
            keys[longs[0]] = param
    return keys


def _all_keys(ctx: Any) -> set[str]:
    """The keys of every command that reads the files (``run`` and ``chat``: the siblings of
    ``ctx.command`` that have a ``--profile``)."""
    keys = set(option_keys(ctx.command))
    parent = ctx.parent.command if ctx.parent is not None else None
    for command in getattr(parent, "commands", {}).values():
        names = option_keys(command)
        if any("--profile" in p.opts for p in command.params):
            keys.update(names)
    return keys


def is_secret_setting(key: str, value: Any) -> bool:
    """Whether a value holds a secret: its key's name says so (``api-key``, ``token``), or it
    is a URL with a password."""
    if is_secret_name(key.replace("-", "_")):
        return True
    if isinstance(value, str) and "@" in value:
        try:
            return urlsplit(value).password is not None
        except ValueError:
            return False
    return False


def shown_value(key: str, value: Any) -> str:
    """``value`` as ``config show`` prints it: a secret as ``***``."""
    if value is None:
        return "-"
    if is_secret_setting(key, value):
        return "***"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value) or "-"
    return str(value)


def _private(info: os.stat_result) -> bool:
    user = getattr(os, "geteuid", None)
    owned = user is None or info.st_uid == user()
    return owned and info.st_mode & 0o077 == 0


def _check_trusted(path: Path, info: os.stat_result) -> None:
    """Refuse a file another user owns or anyone may write: its values could set
    ``--approve all`` for whoever starts a command in that folder (``/tmp``).

    Raises:
        ConfigProblem: the file is not this user's, or is writable by every user.
    """
    user = getattr(os, "geteuid", None)
    if user is not None and info.st_uid not in (user(), 0):
        raise ConfigProblem(
            f"{path}: owned by another user (uid {info.st_uid}): refused, since its values would "
            "apply to your commands; remove it, or run elsewhere"
        )
    if info.st_mode & stat.S_IWOTH:
        raise ConfigProblem(f"{path}: writable by every user: refused (chmod o-w {path})")


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The line of each table and key (dotted keys split), first occurrence."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(_TABLE_LINE, line)
        if header and not line.lstrip().startswith("[["):
            table = _key_parts(header.group(1))
            lines.setdefault(table, number)
            continue
        key = re.match(_KEY_LINE, line)
        if key:
            lines.setdefault(table + _key_parts(key.group(1)), number)
    return lines


def _key_parts(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip("\"'") for part in re.findall(_BARE, dotted))


def _read(path: Path) -> _File | None:
    """The file at ``path`` parsed, or ``None`` when there is none.

    Raises:
        ConfigProblem: it cannot be read, is not UTF-8 or not TOML.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigProblem(f"{path}: cannot be read ({error.strerror or error})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigProblem(f"{path}: not a regular file")
    _check_trusted(path, info)
    from .config_cache import cached, remember

    hit = cached(path, info)
    if hit is not None:
        return _File(path, hit[0], hit[1], _private(info))
    from .._regular import read_regular

    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigProblem(f"{path}: cannot be read ({error})") from None
    toml = _toml()
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as error:
        raise ConfigProblem(f"{path}: not valid TOML: {error}") from None
    parsed = _File(path, data, _key_lines(text), _private(info))
    if not _holds_secret(data):
        remember(path, info, data, parsed.lines)
    return parsed


def _holds_secret(data: Mapping[str, Any]) -> bool:
    """Whether any value of the file, in any table, is a secret (``is_secret_setting``)."""
    for key, value in data.items():
        if isinstance(value, dict):
            if _holds_secret(value):
                return True
        elif is_secret_setting(str(key), value) or any(is_secret_setting(str(key), v) for v in _items(value)):
            return True
    return False


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _toml() -> Any:
    """``tomllib`` (Python >= 3.11), else ``tomli`` (the cli extra installs it on 3.10)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli  # type: ignore[import-not-found, unused-ignore]

    return tomli


def _expected(param: Option) -> tuple[tuple[type, ...], str]:
    """The TOML types ``param`` takes, and their name for a message."""
    if param.multiple:
        return (list,), "an array of strings"
    if param.is_flag and not param.count:
        return (bool,), "true or false"
    if param.count or _is(param.type, "IntParamType"):
        return (int,), "an integer"
    if _is(param.type, "FloatParamType"):
        return (int, float), "a number"
    return (str,), "a string"


def _check_value(ctx: Any, param: Option, setting: Setting) -> Any:
    """``setting``'s value, checked by ``param``'s type and callback as a flag's would be.

    Raises:
        ConfigProblem: a value of the wrong type or one the option refuses.
    """
    value, key = setting.value, setting.key
    types, wanted = _expected(param)
    bad_type = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
    items = value if isinstance(value, list) else []
    if bad_type or any(not isinstance(item, str) for item in items):
        raise ConfigProblem(f"{setting.where}: {key}: expected {wanted}, got {_toml_type(value)}")
    if _is(param.type, "Path") or _is(param.type, "TyperPath"):
        value = [os.path.expanduser(v) for v in value] if param.multiple else os.path.expanduser(value)
    try:
        param.process_value(ctx, value)
    except Exception as error:
        if not _is(error, "BadParameter"):
            raise
        said = "(a secret)" if is_secret_setting(key, value) else repr(setting.value)
        raise ConfigProblem(f"{setting.where}: {key} = {said}: {getattr(error, 'message', error)}") from None
    return value


def _is(thing: object, class_name: str) -> bool:
    """Whether ``thing`` is an instance of a click class named ``class_name`` (of whichever
    click typer uses)."""
    return any(kind.__name__ == class_name for kind in type(thing).__mro__)


def _toml_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "a table"})
    return next((name for kind, name in names.items() if type(value) is kind), type(value).__name__)


def _settings(file: _File, table: Mapping[str, Any], profile: str | None, keys: set[str]) -> list[Setting]:
    """The settings of one table (the defaults or a profile); refuses an unknown key and a secret
    in a file that is not private."""
    prefix = ("profiles", profile) if profile else ()
    found = []
    for key, value in table.items():
        line = file.lines.get((*prefix, key))
        setting = Setting(key, value, file.path, line, profile)
        if key not in keys:
            raise ConfigProblem(f"{setting.where}: unknown key {key!r}{_hint(key, keys)}")
        if is_secret_setting(key, value) and not file.private:
            raise ConfigProblem(
                f"{setting.where}: {key} holds a secret, and the file may be read by others: "
                f"refused (chmod 600 {file.path}, owned by you, or pass it in the environment)"
            )
        found.append(setting)
    return found


def _hint(key: str, keys: set[str]) -> str:
    dashed = key.replace("_", "-")
    if dashed in keys:
        return f" (write it as in the flag: {dashed})"
    return " (the keys are the long options of run and chat without their dashes, e.g. max-turns)"


def _profiles(file: _File) -> dict[str, Mapping[str, Any]]:
    table = file.data.get("profiles", {})
    where = f"{file.path}:{file.lines.get(('profiles',), '')}".rstrip(":")
    if not isinstance(table, dict):
        raise ConfigProblem(f"{where}: profiles must be a table of [profiles.NAME] tables")
    for name, profile in table.items():
        if not isinstance(profile, dict):
            line = file.lines.get(("profiles", name))
            raise ConfigProblem(f"{file.path}:{line}: profiles.{name} must be a table of option values")
    return table


def _layers(files: list[_File], profile: str | None, keys: set[str]) -> list[Setting]:
    """Every setting that applies, lowest precedence first (see the module docstring)."""
    defaults: list[Setting] = []
    chosen: list[Setting] = []
    for file in files:
        top = {key: value for key, value in file.data.items() if key != "profiles"}
        defaults += _settings(file, top, None, keys)
        for name, table in _profiles(file).items():
            settings = _settings(file, table, name, keys)
            if name == profile:
                chosen += settings
    return defaults + chosen


def _check_profile(files: list[_File], profile: str, from_env: bool) -> None:
    known = sorted({name for file in files for name in _profiles(file)})
    if profile in known:
        return
    named = f"${PROFILE_ENV}={profile}" if from_env else f"--profile {profile}"
    if not files:
        looked = " and ".join(str(path) for path in config_files())
        raise ConfigProblem(f"{named}: no configuration file exists (looked for {looked})")
    where = " or ".join(str(file.path) for file in files)
    listed = f" (profiles: {', '.join(known)})" if known else ""
    raise ConfigProblem(f"{named}: no such profile in {where}{listed}")


def apply_config(ctx: Any, profile: str | None) -> None:
    """Give ``ctx``'s options the values of the configuration files (the ``--profile`` callback).

    Sets ``ctx.default_map`` (flags and environment variables still win, as click orders them)
    and ``ctx.meta[META]`` (``{parameter name: Setting}``, for ``config show``).

    Args:
        ctx: the context of ``run`` or ``chat``, before its other options are processed
            (``--profile`` is eager).
        profile: ``--profile`` / ``MINIAGENT_PROFILE``, or ``None``.

    Raises:
        ConfigProblem: see the module docstring.
    """
    files = [file for file in map(_read, config_files()) if file is not None]
    if profile == "":
        profile = None
    if profile is not None:
        source = ctx.get_parameter_source("profile")
        _check_profile(files, profile, getattr(source, "name", "") == "ENVIRONMENT")
    if not files:
        return
    options = option_keys(ctx.command)
    effective: dict[str, Setting] = {}
    for setting in _layers(files, profile, _all_keys(ctx)):
        if setting.key in options:  # a key of run only (--output-schema) is not chat's
            effective[setting.key] = setting
    values: dict[str, Any] = {}
    given: dict[str, Setting] = {}
    for key, setting in effective.items():
        param = options[key]
        assert param.name is not None
        values[param.name] = _check_value(ctx, param, setting)
        given[param.name] = setting
    ctx.default_map = {**(ctx.default_map or {}), **values}
    ctx.meta[META] = given
