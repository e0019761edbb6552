"""The ``tool_sets`` section of ``python -m bench``: the embedded model with tools that are not
built in (``@tool`` functions, an MCP server's tools) and with requests that could destroy files
(``bench/tasks/tool_sets.py``)."""

from .tasks.tool_sets import run

__all__ = ["run"]
