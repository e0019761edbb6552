"""Amazon Bedrock's Converse API, streaming: ``POST /model/{modelId}/converse-stream``.

Wire format: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html;
the response is an AWS event stream read by our own decoder (``net.eventstream``) and mapped by
``_bedrock_stream``; the request body is ``_bedrock_body``'s.

Authentication, in order: a Bedrock API key (``api_key``, else ``$AWS_BEARER_TOKEN_BEDROCK``)
sent as ``Authorization: Bearer``
(https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html); else AWS Signature
Version 4 over each request's exact bytes with the credentials of botocore's chain (environment,
shared files, SSO, container or instance roles), botocore imported only then (extra
``bedrock``). A server on this machine gets neither unless ``api_key`` is given.

Invariants: the endpoint follows the region (``region``, else ``$AWS_REGION``, else
``$AWS_DEFAULT_REGION``, else ``us-east-1``) unless ``base_url`` names another; credentials are
looked up at the first request, never at construction; secrets never reach an error text.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

from .._catalogue import provider
from ..errors import ProviderError
from ..model import ModelEvent, ModelRequest
from ..net.eventstream import EventStreamDecoder
from ._bedrock_body import bedrock_origin, build_converse_body, fits_tool_use_id
from ._bedrock_stream import map_converse_stream
from ._client import HTTPClient
from ._config import HTTPSettings, is_local_url
from ._history import WireIds

_ROW = provider("bedrock")

__all__ = ["BedrockClient", "endpoint", "map_converse_stream"]

PROVIDER = "Bedrock"
DEFAULT_REGION = "us-east-1"
_HOST = re.compile(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?")
_SIGNED = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


def endpoint(region: str) -> str:
    """The Bedrock runtime endpoint of ``region``: ``https://bedrock-runtime.REGION.amazonaws.com``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


def _region(region: str | None) -> str:
    return region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


class BedrockClient(HTTPClient):
    """A ``ModelClient`` for Bedrock's ``ConverseStream``.

    Args:
        model: the model id or inference profile (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
            ``amazon.nova-pro-v1:0``, an ARN), sent in the path.
        base_url: the runtime endpoint; default ``endpoint(region)``. The catalogue's default
            (the ``us-east-1`` endpoint) also follows ``region``.
        api_key: a Bedrock API key, sent as a bearer token; default
            ``$AWS_BEARER_TOKEN_BEDROCK``; without one, requests are signed (SigV4, extra
            ``bedrock``).
        region: the AWS region (endpoint and signature); default from the endpoint's host, else
            ``$AWS_REGION``, ``$AWS_DEFAULT_REGION``, ``us-east-1``.
        sigv4: ``True``: always sign (SigV4; also a server on this machine, such as a local
            gateway that checks signatures); ``False``: never; default ``None``: sign when there
            is no API key and the server is not local.
        settings: the HTTP settings (``HTTPSettings``); default ``HTTPSettings()``.
        temperature: ``inferenceConfig.temperature``, when given.
        max_tokens: ``inferenceConfig.maxTokens``, when given.
        prices: US dollars per million tokens for ``Usage.cost_usd``; default: the
            ``genai-prices`` table (provider ``aws``) on an AWS endpoint, else unknown.

    Raises:
        ProviderError: no API key and botocore not installed (for a server that is not local).
        ValueError: bad ``base_url`` or ``prices``.
    """

    _provider = PROVIDER
    _key_env = _ROW.key_env or ""
    _price_table = "aws"
    _official_hosts = (".amazonaws.com", ".amazonaws.com.cn")
    _default_headers: ClassVar[Mapping[str, str]] = {"Accept": "application/vnd.amazon.eventstream"}

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        region: str | None = None,
        sigv4: bool | None = None,
        settings: HTTPSettings | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        prices: Mapping[str, float] | None = None,
    ) -> None:
        """Configure the client; no connection is made and no credential is looked up."""
        if base_url is None or base_url.rstrip("/") == _ROW.default_base_url:
            base_url = endpoint(_region(region))
        host = (urlsplit(base_url).hostname or "").lower()
        found = _HOST.fullmatch(host)
        self.region = region or (found.group(1) if found else _region(None))
        self._signer: _SigV4 | None = None
        self._sigv4 = sigv4
        super().__init__(model, base_url, api_key, settings=settings, temperature=temperature)
        self.max_tokens = max_tokens
        self._origin = bedrock_origin(self.base_url)
        self._set_prices(prices)

    def _resolve_key(self, api_key: str | None) -> str | None:
        """The bearer token, or ``None`` when requests are signed instead (or the server is local).

        Raises:
            ProviderError: no token and no botocore to sign with.
        """
        if self._sigv4:
            self._signer = _SigV4(self.region)
            return None
        if api_key:
            return api_key
        if is_local_url(self.base_url):
            return None
        token = os.environ.get(self._key_env)
        if token or self._sigv4 is False:
            return token or None
        self._signer = _SigV4(self.region)
        return None


    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Stream one assistant turn for ``request``.

        The request body is built at once; the HTTP request (and, for a signed client, the
        credential lookup) starts on the first ``next()``.

        Returns:
            A generator of the events of ``_bedrock_stream.map_converse_stream``, ending with a
            ``DoneEvent``. Ends quietly, possibly early, once ``request.cancel`` is set.

        Raises:
            ProviderError: see ``Transport.stream`` and ``map_converse_stream``; no AWS
                credentials found for a signed request.
        """
        ids = WireIds(fits_tool_use_id)
        body = build_converse_body(
            self.model,
            request.system,
            request.messages,
            request.tools,
            origin=self._origin,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            output_schema=request.output_schema,
            extra_body=self.extra_body,
            wire_ids=ids,
        )
        path = f"/model/{quote(self.model, safe='')}/converse-stream"
        sign = None
        if self._signer is not None:
            signer, url = self._signer, f"{self.base_url}{path}"

            def sign(payload: bytes) -> Mapping[str, str]:
                return signer.headers(url, payload)

        events = self._stream(path, body, request, self._map, decoder=EventStreamDecoder, sign=sign)
        return ids.mapped_back(events)

    def _map(self, events: Iterable[Any], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """``map_converse_stream`` with this client's origin, model and prices."""
        return map_converse_stream(
            events,
            secrets=secrets,
            price=self._pricer.priced,
            provider=self._provider,
            origin=self._origin,
            model=self.model,
        )


class _SigV4:
    """Signs requests with botocore's SigV4 and the credentials of its default chain.

    Raises (at construction):
        ProviderError: botocore is not installed.
    """

    def __init__(self, region: str) -> None:
        try:  # imported by name: an optional extra without type stubs
            auth = importlib.import_module("botocore.auth")
            awsrequest = importlib.import_module("botocore.awsrequest")
            sessions = importlib.import_module("botocore.session")
        except ImportError:
            raise ProviderError(
                f"no {PROVIDER} credentials: set {_ROW.key_env} (a Bedrock API key), or install the "
                "bedrock extra (pip install 'miniagent[bedrock]') to sign requests with your AWS "
                "credentials"
            ) from None
        self.region = region
        self._auth: Any = auth.SigV4Auth
        self._request: Any = awsrequest.AWSRequest
        self._session: Callable[[], Any] = sessions.get_session
        self._credentials: Any = None

    def headers(self, url: str, payload: bytes) -> dict[str, str]:
        """The SigV4 headers of a POST of ``payload`` to ``url`` (fresh timestamp).

        Raises:
            ProviderError: no credentials in botocore's chain.
        """
        if self._credentials is None:
            self._credentials = self._session().get_credentials()
            if self._credentials is None:
                raise ProviderError(
                    f"no {PROVIDER} credentials: set {_ROW.key_env} (a Bedrock API key) or AWS "
                    "credentials (AWS_ACCESS_KEY_ID, a profile, SSO or an instance role)"
                )
        request = self._request(
            method="POST", url=url, data=payload, headers={"Content-Type": "application/json"}
        )
        self._auth(self._credentials.get_frozen_credentials(), "bedrock", self.region).add_auth(request)
        return {name: value for name, value in request.headers.items() if name.lower() in _SIGNED}
