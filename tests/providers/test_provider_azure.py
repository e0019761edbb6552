"""The ``azure`` provider (Azure OpenAI's v1 API) and the named OpenAI-compatible services
(``openrouter``, ``deepseek``) against a loopback server: URL, auth header, key variables, the
deployment as the model, both APIs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from api_rules import OPENAI_RULES, enforcing, openai_error
from api_rules_responses import ResponsesAPI, issued_in, text_reply
from providers_server import ProviderServer, Reply, fixture, request, run, sse

from miniagent import ProviderError, Tool, ToolResult, run_agent
from miniagent.providers import RetryPolicy, create_client
from miniagent.providers.azure import AzureChatClient, AzureResponsesClient, azure_base_url
from miniagent.providers.compatible import DeepSeekClient, OpenRouterClient

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)
CHAT_TEXT = Reply(
    [sse({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}, done=True)]
)
SECRETS = ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*SECRETS, "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def azure(server: ProviderServer, api: str = "chat", **options: Any) -> Any:
    return create_client(
        "azure", "my-gpt5-deployment", f"{server.url}/openai/v1", retry=NO_RETRY, api=api, **options
    )


def test_chat_goes_to_the_deployment_with_the_api_key_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-for-azure")
    with ProviderServer(handler=enforcing(OPENAI_RULES, [CHAT_TEXT], openai_error)) as server:
        client = azure(server, api_key="azure-key-123", reasoning_effort="low")
        assert isinstance(client, AzureChatClient)
        outcome = run(client.stream(request()))
    assert outcome.text == "Hi"
    captured = server.requests[0]
    assert captured.path == "/openai/v1/chat/completions"
    assert captured.headers["api-key"] == "azure-key-123" and "Authorization" not in captured.headers
    assert captured.body["model"] == "my-gpt5-deployment" and captured.body["reasoning_effort"] == "low"
    assert "sk-openai-not-for-azure" not in str(captured.headers)


def test_responses_go_to_the_deployment_and_replay_reasoning() -> None:
    handler = ResponsesAPI(
        Reply([fixture("responses-function-call.sse")]),
        text_reply("Sunny."),
        deployments={"my-gpt5-deployment": "gpt-5-mini"},
    )
    tool = Tool("get_weather", "w", {"type": "object"}, lambda arguments, cancel: ToolResult("18 C"))
    with ProviderServer(handler=handler) as server:
        client = azure(server, api="responses", api_key="azure-key-123", reasoning_effort="low")
        assert isinstance(client, AzureResponsesClient)
        result = run_agent(client=client, system="", tools=[tool], user="weather?", max_turns=3)
        client.close()
    assert result.stop_reason == "complete", handler.refused
    assert [c.path for c in server.requests] == ["/openai/v1/responses"] * 2
    assert all(c.headers["api-key"] == "azure-key-123" for c in server.requests)
    body = server.requests[1].body
    assert body["model"] == "my-gpt5-deployment" and body["include"] == ["reasoning.encrypted_content"]
    sent = {i["id"]: i["encrypted_content"] for i in body["input"] if i.get("type") == "reasoning"}
    assert sent == issued_in(fixture("responses-function-call.sse"))


def test_an_entra_token_goes_as_a_bearer_header(monkeypatch: pytest.MonkeyPatch) -> None:
    with ProviderServer(CHAT_TEXT) as server:
        run(azure(server, azure_ad_token="eyJ0eXAiOiJKV1Qi.token").stream(request()))
        monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "eyJ-from-env")
        run(
            azure(server, api="responses").stream(request())
        )  # a local URL: no environment credential is sent
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "key-from-env")
        run(azure(server, api_key="explicit-key", azure_ad_token="ignored").stream(request()))
    first, second, third = (c.headers for c in server.requests)
    assert first["Authorization"] == "Bearer eyJ0eXAiOiJKV1Qi.token" and "api-key" not in first
    assert "Authorization" not in second and "api-key" not in second
    assert third["api-key"] == "explicit-key" and "Authorization" not in third


def test_the_environment_gives_the_key_or_the_token_for_a_remote_resource(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = "https://contoso.openai.azure.com/openai/v1"
    with pytest.raises(ProviderError) as caught:
        create_client("azure", "dep", url)
    assert str(caught.value) == (
        "no Azure OpenAI credential: pass api_key=... or azure_ad_token=..., or set AZURE_OPENAI_API_KEY "
        "(the resource's key) or AZURE_OPENAI_AD_TOKEN (a Microsoft Entra ID token)"
    )
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "tok")
    client: Any = create_client("azure", "dep", url)
    assert client._headers["Authorization"] == "Bearer tok" and "api-key" not in client._headers
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "key")
    client = create_client("azure", "dep", url, api="responses")
    assert client._headers["api-key"] == "key" and "Authorization" not in client._headers


def test_the_resource_and_the_deployment_must_be_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="azure needs the resource's URL"):
        create_client("azure", "dep", api_key="k")
    with pytest.raises(ValueError, match="azure needs the deployment name as the model"):
        create_client("azure", base_url="https://contoso.openai.azure.com", api_key="k")
    with pytest.raises(ValueError, match="api must be 'chat' or 'responses'"):
        create_client("azure", "dep", "https://contoso.openai.azure.com", "k", api="assistants")
    assert azure_base_url("https://contoso.openai.azure.com/") == "https://contoso.openai.azure.com/openai/v1"
    assert (
        azure_base_url("https://contoso.openai.azure.com/openai/v1")
        == "https://contoso.openai.azure.com/openai/v1"
    )
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://fabrikam.openai.azure.com")
    client: Any = create_client("azure", "dep", api_key="k")
    assert client.base_url == "https://fabrikam.openai.azure.com/openai/v1"
    assert (
        repr(client) == "AzureChatClient(model='dep', base_url='https://fabrikam.openai.azure.com/openai/v1')"
    )


def test_the_key_is_never_in_an_error_text() -> None:
    key = "azure-secret-key-0123456789abcdef"
    echo = openai_error(f"Access denied due to invalid subscription key {key}.")
    echo.status = 401
    for api in ("chat", "responses"):
        with ProviderServer(echo) as server, pytest.raises(ProviderError) as caught:
            run(azure(server, api=api, api_key=key).stream(request()))
        assert key not in str(caught.value) and str(caught.value).startswith("Azure OpenAI HTTP 401")


@pytest.mark.parametrize(
    ("name", "cls", "variable", "url"),
    [
        ("openrouter", OpenRouterClient, "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"),
        ("deepseek", DeepSeekClient, "DEEPSEEK_API_KEY", "https://api.deepseek.com"),
    ],
)
def test_named_compatible_services_read_their_own_key(
    monkeypatch: pytest.MonkeyPatch, name: str, cls: type, variable: str, url: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    with pytest.raises(ProviderError, match=f"set {variable}"):
        create_client(name)
    monkeypatch.setenv(variable, "their-key")
    client: Any = create_client(name)
    assert type(client) is cls and client.base_url == url
    assert client._headers["Authorization"] == "Bearer their-key"


def test_deepseek_gets_its_reasoning_back(tmp_path: Path) -> None:
    from api_rules import deepseek_reasoning_passed_back

    handler = enforcing(
        [*OPENAI_RULES, deepseek_reasoning_passed_back],
        [Reply([fixture("deepseek-reasoning-tool-call.sse")]), CHAT_TEXT],
        openai_error,
    )
    tool = Tool("get_date", "d", {"type": "object"}, lambda arguments, cancel: ToolResult("2026-12-01"))
    with ProviderServer(handler=handler) as server:
        client = create_client("deepseek", "deepseek-reasoner", f"{server.url}", "k", retry=NO_RETRY)
        result = run_agent(client=client, system="", tools=[tool], user="date?", max_turns=3)
        client.close()  # type: ignore[attr-defined]
    assert result.stop_reason == "complete" and server.requests[1].path == "/chat/completions"
