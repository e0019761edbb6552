"""Which names hold a secret: the rule of ``miniagent.process.environment`` (its module
docstring), in a module of its own so that code which only needs the rule (the CLI's
configuration files) does not import the redaction machinery (standard library only)."""

from __future__ import annotations

import re

__all__ = ["SECRET_WORDS", "is_secret_name"]

SECRET_WORDS = (
    "API_KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "SECRET_KEY",
    "PASSWORD",
    "PASSWD",
    "ACCESS_KEY",
    "PRIVATE_KEY",
)

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:" + "|".join(SECRET_WORDS) + r")$|(?:^|_)(?:SECRET|TOKEN)_",
)


def is_secret_name(name: str) -> bool:
    """Return whether an environment variable called ``name`` holds a secret (rule: module doc).

    Args:
        name: the variable's name, any case.

    Returns:
        ``True`` for e.g. ``OPENAI_API_KEY``, ``github_token``, ``AWS_SECRET_ACCESS_KEY``;
        ``False`` for e.g. ``HOME``, ``PATH``, ``MY_SETTING``.
    """
    return _SECRET_NAME.search(name.upper()) is not None
