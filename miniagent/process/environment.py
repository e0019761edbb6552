"""The environment given to child processes, without secrets, and which values to redact.

API keys must never reach a session, a log or ``--json`` output. A command run by ``run_command``
(and the ``grep`` worker) therefore gets an environment with every *secret variable* removed, and
the values of those variables are replaced with ``***`` in the command's output, in case the
command finds them another way (e.g. ``cat /proc/$PPID/environ``).

A variable is a secret when its name, compared case-insensitively (upper-cased):

- is one of ``SECRET_WORDS`` (``API_KEY``, ``APIKEY``, ``TOKEN``, ``SECRET``, ``SECRET_KEY``,
  ``PASSWORD``, ``PASSWD``, ``ACCESS_KEY``, ``PRIVATE_KEY``) or ends with ``_`` and one of them,
  e.g. ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``,
  ``AWS_ACCESS_KEY``; or
- contains ``SECRET_`` or ``TOKEN_`` at its start or after an underscore, e.g.
  ``AWS_SECRET_ACCESS_KEY``, ``CLIENT_SECRET_VALUE``, ``SECRET_KEY_BASE``,
  ``AWS_BEARER_TOKEN_BEDROCK`` (a Bedrock API key).

``HOME``, ``PATH``, ``MY_SETTING``, ``TOKENIZERS_PARALLELISM`` or ``KEYBOARD`` are not secrets.

Redaction (``miniagent._redaction.redactor``, applied to ``secret_values``) replaces values of at
least ``MIN_REDACTED_CHARS`` (8) characters; shorter values (``1``, ``true``) would blank ordinary
output and are too short to be real keys. Limits: a value the command transforms (base64, split
over lines) is not recognised.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .._redaction import MIN_REDACTED_CHARS, Redactor
from .._secret_names import SECRET_WORDS, is_secret_name

__all__ = [
    "SECRET_WORDS",
    "is_secret_name",
    "scrubbed_environ",
    "secret_values",
    "current_redactor",
]

def scrubbed_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return a copy of ``environ`` without its secret variables.

    Args:
        environ: the variables to filter; ``None`` means ``os.environ`` as it is now.

    Returns:
        A new dict of every variable whose name is not a secret (``is_secret_name``).
    """
    source = os.environ if environ is None else environ
    return {name: value for name, value in source.items() if not is_secret_name(name)}


def secret_values(*environs: Mapping[str, str]) -> list[str]:
    """Return the values worth redacting: those of secret variables in any of ``environs``.

    Args:
        environs: mappings of variable names to values (e.g. ``os.environ`` and the command's).

    Returns:
        Distinct values of at least ``MIN_REDACTED_CHARS`` characters, longest first.
    """
    found = {
        value
        for environ in environs
        for name, value in environ.items()
        if len(value) >= MIN_REDACTED_CHARS and is_secret_name(name)
    }
    return sorted(found, key=lambda value: (-len(value), value))


def current_redactor() -> Redactor:
    """A ``Redactor`` of the secret values of ``os.environ`` as it is now (``secret_values``)."""
    return Redactor(secret_values(os.environ))
