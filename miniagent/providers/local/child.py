"""The child process that runs llama.cpp's server for ``LocalServer`` (``python -m`` this module).

Why a child: llama.cpp's C++ server, once started in a Python process, stops only through its
destructor, which holds the interpreter lock for seconds while it joins its worker thread; no
signal handler or watchdog of that process can run meanwhile. In a child, the parent stops the
server with ``SIGKILL`` at once (the OS frees the model's memory) and never waits on llama.cpp.

Protocol (one JSON object per line):

- the parent writes the settings on the child's stdin: ``{"model": PATH, "alias": NAME,
  "n_ctx": N, "threads": N, "seed": N, "temperature": T, "chat_template": TEXT | null,
  "slot_save_path": DIR | null, "verbose": BOOL, "ports": [PORT, ...]}``;
- the child answers on stdout ``{"port": PORT}`` once the model is loaded and the server listens,
  or ``{"error": TEXT}`` when no port worked, and exits in that case;
- then the child waits for end of file on its stdin and exits with ``os._exit(0)`` (no
  destructor). Its stdin is a pipe whose only writer is the parent, so the end of file also
  comes when the parent dies in any way (``SIGKILL`` included). A watchdog thread also exits when
  the parent's process id changes (re-parented), as a second guard.

The child runs in its own session (the parent starts it so), so a Ctrl-C on the terminal reaches
only the parent, which then decides; SIGINT is ignored here as well.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

__all__ = ["main"]


def _exit_when_orphaned(parent: int) -> None:
    """Thread body: leave when stdin closes (the parent closed it or died) or we are re-parented."""

    def watch_stdin() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    def watch_parent() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(0)
            time.sleep(0.5)

    threading.Thread(target=watch_stdin, name="stdin-eof", daemon=True).start()
    threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()


def _params(xllamacpp: Any, settings: dict[str, Any], port: int) -> Any:
    params = xllamacpp.CommonParams()
    params.model.path = settings["model"]
    params.model_alias = {settings["alias"]}
    params.n_ctx = int(settings["n_ctx"])
    params.n_parallel = 1
    params.cpuparams.n_threads = int(settings["threads"])
    params.cpuparams_batch.n_threads = int(settings["threads"])
    params.use_jinja = True
    if settings.get("chat_template") is not None:
        params.chat_template = settings["chat_template"]
    params.sampling.temp = float(settings["temperature"])
    params.sampling.seed = int(settings["seed"])
    if settings.get("slot_save_path"):
        params.slot_save_path = os.path.join(settings["slot_save_path"], "")  # needs the slash
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.verbosity = 3 if settings.get("verbose") else 0
    return params


def _answer(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    """Run the protocol above. Never returns normally: ends with ``os._exit``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    line = sys.stdin.readline()
    if not line:
        os._exit(0)
    settings = json.loads(line)
    _exit_when_orphaned(parent)
    try:
        import xllamacpp  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        _answer({"error": f"cannot import xllamacpp: {exc}"})
        os._exit(1)
    last = "no port to try"
    server = None
    for port in settings["ports"]:
        try:
            server = xllamacpp.Server(_params(xllamacpp, settings, int(port)))
        except Exception as exc:  # xllamacpp raises RuntimeError and friends
            last = str(exc) or type(exc).__name__
            continue
        _answer({"port": int(port)})
        break
    if server is None:
        _answer({"error": last})
        os._exit(1)
    while True:  # the watchdog threads end the process
        time.sleep(3600)


if __name__ == "__main__":
    main()
