"""Child processes in a group of their own: the floor that tools, MCP and the embedded model share.

A floor below the wings (standard library and the core only; it imports nothing of
``toolbox``, ``mcp``, ``providers`` or ``cli``).

- ``groups``: the registry of running groups, ``kill_running_children``, ``group_alive``.
- ``children``: ``start_child``, ``stop_child``, ``run_process`` (bounded capture, cancel,
  timeout), ``contained`` (the reaper, ``_reaper.py``, for a whole tree).
- ``environment``: the scrubbed environment a child gets, and the secret names and values.
- ``sandbox``: the ``workspace`` sandbox (Landlock, seccomp, no capabilities; ``_confine`` is
  its child side, loaded by path in ``python -I -S`` children), ``SandboxUnavailable`` where
  the kernel cannot confine.
"""
