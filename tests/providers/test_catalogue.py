"""The provider catalogue is the one list of providers: names, keys, defaults and client factories."""

from __future__ import annotations

import importlib

import pytest

from miniagent import _catalogue
from miniagent.cli.defaults import resolve_provider


@pytest.mark.parametrize("row", _catalogue.CATALOGUE, ids=lambda row: row.name)
def test_every_row_names_a_client_factory_that_exists(row: _catalogue.Provider) -> None:
    module, _, attribute = row.client.partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))
    if row.takes_url:
        assert row.key_env
    if row.takes_url and not (row.default_model and row.default_base_url):  # azure: the user's resource
        from miniagent.providers import create_client

        with pytest.raises(ValueError, match=f"{row.name} needs"):
            create_client(row.name, api_key="sk-test-not-real")


def test_create_client_builds_each_rows_client_with_its_defaults() -> None:
    from miniagent.providers import DEFAULT_MODELS, create_client

    for row in _catalogue.CATALOGUE:
        if not (row.takes_url and row.default_model and row.default_base_url):
            continue
        client = create_client(row.name, api_key="sk-test-not-real")
        module, _, attribute = row.client.partition(":")
        assert type(client) is getattr(importlib.import_module(module), attribute)
        assert client.model == row.default_model == DEFAULT_MODELS[row.name]  # type: ignore[attr-defined]
        assert client.base_url == row.default_base_url  # type: ignore[attr-defined]
        assert client._key_env == row.key_env  # type: ignore[attr-defined]
    azure = create_client("azure", "deployment", "https://contoso.openai.azure.com", "sk-test-not-real")
    assert azure._key_env == _catalogue.provider("azure").key_env  # type: ignore[attr-defined]


def test_the_cli_chooses_by_the_rows_key_variables_in_order() -> None:
    keys = {name: _catalogue.provider(name).key_env or "" for name in _catalogue.CHOSEN_BY_KEY}
    for position, name in enumerate(_catalogue.CHOSEN_BY_KEY):
        env = {keys[later]: "set" for later in _catalogue.CHOSEN_BY_KEY[position:]}
        assert resolve_provider(None, env) == name
    assert resolve_provider(None, {}) == _catalogue.FALLBACK
    assert resolve_provider(None, {}, base_url="http://127.0.0.1:1/v1") == _catalogue.FOR_BASE_URL
    assert resolve_provider(" OpenAI ", {}) == "openai"
    with pytest.raises(ValueError, match="expected one of " + ", ".join(_catalogue.PROVIDERS)):
        resolve_provider("ollama", {})
