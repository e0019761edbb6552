"""The provider names, and the one check that a name is one of them (standard library only).

``create_client`` and the CLI both validate through ``check_provider``, so the accepted names and
the error text live here alone; ``import miniagent.cli`` can check a name without importing
``requests``.
"""

from __future__ import annotations

__all__ = ["PROVIDERS", "check_provider"]

PROVIDERS = ("local", "openai", "anthropic")
"""The provider names ``create_client`` and ``--provider`` accept."""


def check_provider(name: str) -> str:
    """Return the provider ``name`` in its canonical form (surrounding spaces dropped, lowercase).

    Raises:
        ValueError: ``name`` is not one of ``PROVIDERS`` (the text lists them).
    """
    canonical = name.strip().lower()
    if canonical not in PROVIDERS:
        raise ValueError(f"unknown provider {name!r}: expected one of {', '.join(PROVIDERS)}")
    return canonical
