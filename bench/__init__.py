"""Benchmarks of miniagent against its peers, and the speed targets it must show (issue 6).

Run from the repository root, in a venv that has miniagent and the peers::

    python3 -m venv .bench-venv \\
        && .bench-venv/bin/pip install -e '.[all]' -r bench/requirements.txt \\
        && .bench-venv/bin/python -m bench

``python -m bench`` prints a table and writes ``BENCHMARKS.md`` (numbers, machine, command).
``--quick`` runs fewer repetitions (about a minute); ``--only startup,loop`` picks sections;
``--no-write`` leaves ``BENCHMARKS.md`` alone.

One module per benchmark, each with ``run(report, quick)``:

- ``startup``: ``import miniagent`` over a bare interpreter, ``-X importtime``, the CLI's
  ``--help``/``--version``, and the imports of ``llm``, ``smolagents``, ``pydantic_ai``, ``agents``.
- ``loop``: per-turn overhead of ``run_agent`` with a scripted model and a trivial tool (in memory,
  with a session file, with trimming) and the same loop in ``llm``, ``pydantic-ai``, ``smolagents``.
- ``sessions``: appends per second (with and without fsync), loading and resuming a
  100,000-message session against the floor of ``json.loads`` per line.
- ``streams``: the SSE decoder and both stream mappings on a large recorded-style stream, from
  memory and over loopback, against the official ``openai`` and ``anthropic`` SDKs and the floor
  of ``json.loads`` per payload; time to first event.
- ``cancel``: cancel -> ``run_agent`` returns, p50/p99 over 100+ trials: a silent socket, a
  cooperative tool, ``run_command`` running ``sleep 30``.
- ``local_model``: the embedded llama.cpp model, first and warm run (information only).

Machines are noisy: every figure is a median of repeated runs, and comparisons are ratios
measured in the same run. Peers that are not installed (or cannot run offline) are skipped and
named in the report.
"""
