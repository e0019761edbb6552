"""The cancellable HTTP exchange that model clients (``providers/``) and MCP share.

A floor below the wings: it imports only the core (``errors``, ``_text``, ``_redaction``),
``requests`` and ``urllib3``, and nothing of ``providers``, ``mcp``, ``toolbox`` or ``cli``.
Importing it imports ``requests``, so ``import miniagent`` never imports it.

- ``connection``: the one module that reaches into urllib3 (``new_session``, ``open_response``,
  ``response_socket``, ``release``): every phase of a request can be cancelled.
- ``watcher``: ``SocketWatcher``, which shuts a stream's socket down when the cancel event is set.
- ``sse``: ``SSEDecoder``, the server-sent-events reader (WHATWG rules).
- ``eventstream``: ``EventStreamDecoder``, the AWS event stream reader (Bedrock's frames).
- ``urls``: base-URL and proxy checks, URLs shown without their secrets.
- ``failures``: the one wording of a failed connection (``connection_failure``).
"""
