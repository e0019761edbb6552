"""Agent runs as Celery tasks (extra ``celery``): ``agent_task(app, redis_url=...)``.

One task runs one ``run_agent`` with a ``RedisSession`` keyed by the caller's run id. Invariants:

- The task's arguments are JSON: ``run_id``, ``user`` and an ``AgentSpec`` as a dict. The model
  client and the tools are built inside the worker process (after the fork) from the spec, never
  pickled from the caller.
- ``acks_late`` and ``reject_on_worker_lost``: a task whose worker died is delivered again and
  resumes the same session. The new delivery has the same task id, which is the lease's
  ``owner``, so it takes the dead worker's lease over at once (a still-running old incarnation
  is fenced off: its next append fails). Resume repair answers the call that was interrupted, and
  the run goes on with ``RESUMED`` as its user message.
- A second task with the same run id (another task id) fails fast with ``SessionError``.
- Revocation with ``terminate=True`` (SIGTERM to the pool process) and the soft time limit set
  the run's cancel event: the run closes its open calls and the task returns stop reason
  ``aborted``. The run itself lives in a thread of the task, so the exception Celery raises for a
  soft time limit lands in the waiting task thread, never inside a tool.
- The task returns ``{"run_id", **RunResult.to_json()}``: ``messages`` (``Message.to_json()``
  objects), ``stop_reason``, ``usage`` and ``pending``; ``RunResult.from_json`` reads it back.
- Approval is the spec's ``approve`` mode (``approval.policy_for``: ``all``, ``read-only`` or
  ``defer``). With ``defer`` a call that may change something stops the task with stop reason
  ``deferred`` and the calls in ``pending``; record decisions in the run's session
  (``pending.decide(RedisSession(url, run_id), call_id, approved)``), then send the task again
  with ``user=None``: the decided calls are answered so (an approved one runs at most once), the
  others asked again, and the run goes on without a new user message.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .agent import RunResult, run_agent
from .approval import policy_for
from .messages import Message
from .pending import decided
from .stores.redis_store import RedisSession
from .tools import Tool

if TYPE_CHECKING:
    from .tracing import Tracer

__all__ = ["AgentSpec", "agent_task", "RESUMED"]

RESUMED = "(This run was interrupted and resumed on another worker: go on with the task.)"
_WORKER_MODES = ("all", "read-only", "defer")  # the approval modes that need no terminal


@dataclass(frozen=True)
class AgentSpec:
    """What a worker needs to build one run; JSON-able (``to_dict`` / ``from_dict``).

    Args:
        provider: ``create_client`` provider name (``"openai"``, ``"anthropic"``, ``"local"``).
        model: the model name (``None``: the provider's default).
        base_url: the API root, e.g. one model server every worker points at.
        system: the system prompt.
        max_turns: the most model requests per run.
        tools: ``"module:function"`` returning the run's ``list[Tool]``, called in the worker with
            ``tool_options`` as keyword arguments; ``None``: no tools.
        tool_options: JSON-able keyword arguments for ``tools`` (e.g. ``{"workspace": "/srv/x"}``).
        client_options: JSON-able keyword arguments for ``create_client`` (timeouts, ...).
        approve: the approval mode (``approval.policy_for``): ``"all"``, ``"read-only"`` or
            ``"defer"`` (calls that may change something wait for a decision).
        max_repeats: ``run_agent(max_repeats=...)`` (``None``: no such stop).

    Raises:
        ValueError: ``approve`` is not one a worker can apply (``"ask"`` needs a terminal).
    """

    provider: str
    model: str | None = None
    base_url: str | None = None
    system: str = ""
    max_turns: int = 8
    tools: str | None = None
    tool_options: dict[str, Any] = field(default_factory=dict)
    client_options: dict[str, Any] = field(default_factory=dict)
    approve: str = "all"
    max_repeats: int | None = None

    def __post_init__(self) -> None:
        if self.approve not in _WORKER_MODES:
            raise ValueError(f"approve must be one of {', '.join(_WORKER_MODES)}, not {self.approve!r}")

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON object (a task argument)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSpec:
        """The spec of ``to_dict``'s object; ``TypeError`` for unknown fields."""
        return cls(**data)

    def build_tools(self) -> list[Tool]:
        """Import and call the ``tools`` factory (in the worker)."""
        if self.tools is None:
            return []
        module, _, name = self.tools.partition(":")
        factory = getattr(import_module(module), name)
        tools: list[Tool] = list(factory(**self.tool_options))
        return tools


def agent_task(
    app: Any,
    *,
    redis_url: str,
    lease_seconds: float = 30,
    name: str = "miniagent.run_agent",
    tracer: Tracer | None = None,
    **task_options: Any,
) -> Any:
    """Register the agent task on the Celery ``app`` and return it.

    Call it as ``task.delay(run_id, user, spec.to_dict())`` (or ``apply_async``); the result is
    ``{"run_id", "messages", "stop_reason", "usage", "pending"}`` (``RunResult.from_json`` reads
    it). ``user=None`` goes on from the run's session without a new user message (after a
    ``deferred`` stop and the decisions recorded in the session).

    Args:
        app: the ``celery.Celery`` application (its broker: e.g. the same Redis).
        redis_url: where the sessions live (``RedisSession``).
        lease_seconds: the session lease; a killed worker's session is free again after this.
        name: the task's name.
        tracer: traces every run of the task (``run_agent(tracer=...)``, e.g.
            ``miniagent.otel.OtelTracer()``): made once per worker process, shared by its runs.
        **task_options: more ``app.task`` options (e.g. ``soft_time_limit``); ``acks_late`` and
            ``reject_on_worker_lost`` are on unless given.

    Raises (from the task):
        SessionError: another task holds the run's session (same run id), or a stored record
            is unreadable.
        Exception: what ``run_agent`` raises (model client errors, a tool's own exception).
    """
    options = {"acks_late": True, "reject_on_worker_lost": True, **task_options}

    @app.task(bind=True, name=name, **options)  # type: ignore[untyped-decorator]
    def run(task: Any, run_id: str, user: str | None, spec: dict[str, Any]) -> dict[str, Any]:
        agent = AgentSpec.from_dict(spec)
        with RedisSession(redis_url, run_id, lease_seconds, owner=task.request.id) as store:
            history = store.load()  # takes the lease: a duplicate run id fails here, at once
            prompt = RESUMED if history and user is not None else user
            result = _run_cancellable(agent, prompt, store, history, tracer)
        return {"run_id": run_id, **result.to_json()}

    return run


def _run_cancellable(
    agent: AgentSpec, user: str | None, store: RedisSession, history: list[Message], tracer: Tracer | None
) -> RunResult:
    """Run in a thread; SIGTERM (revoke with terminate) or any exception raised into the waiting
    task thread (the soft time limit) sets the cancel event, then waits for the run to close."""
    from .providers import create_client

    cancel = threading.Event()
    finished = threading.Event()  # not Thread.is_alive(): an interrupted join() can leave it wrong
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            client = create_client(agent.provider, agent.model, agent.base_url, **agent.client_options)
        except BaseException as error:
            outcome["error"] = error
            finished.set()
            return
        try:
            tools = agent.build_tools()
            outcome["result"] = run_agent(
                client=client,
                system=agent.system,
                tools=tools,
                user=user,
                max_turns=agent.max_turns,
                cancel=cancel,
                before_tool_call=decided(history, policy_for(agent.approve, tools)),
                session=store,
                max_repeats=agent.max_repeats,
                tracer=tracer,
            )
        except BaseException as error:  # handed to the task thread
            outcome["error"] = error
        finally:
            try:
                close = getattr(client, "close", None)
                if close is not None:
                    close()
            finally:
                finished.set()

    in_main = threading.current_thread() is threading.main_thread()  # prefork and solo pools
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: cancel.set()) if in_main else None
    worker = threading.Thread(target=target, name="miniagent-run", daemon=True)
    try:
        worker.start()
        while True:
            try:
                if finished.wait(0.5):
                    break
            except BaseException:  # SoftTimeLimitExceeded (or another interrupt): stop the run
                cancel.set()
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
    if "error" in outcome:
        raise outcome["error"]
    result: RunResult = outcome["result"]
    return result
