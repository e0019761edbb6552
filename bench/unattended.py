"""Unattended runs: the bypass corpus against the command rules (miniagent's and mini-swe-agent's
whitelist idea, side by side, offline) and the cost of the kernel sandbox per command."""

from __future__ import annotations

import re
import resource
import tempfile
import time
from pathlib import Path

from .bypass_corpus import ALLOWED, CORPUS, MINI_SWE_WHITELISTS, RULES, prepare_workspace
from .common import Report, Row, fmt_ms, fmt_us, median, percentile

SANDBOX_TARGET_SECONDS = 0.005


def _admitted_by_miniagent(folder: Path, commands: tuple[str, ...]) -> int:
    from miniagent.approval import command_rules
    from miniagent.messages import ToolCall
    from miniagent.toolbox import Workspace

    policy = command_rules(RULES, workspace=Workspace(folder))
    return sum(1 for c in commands if policy(ToolCall("c", "run_command", {"command": c})).approved)


def _admitted_by_whitelist(patterns: tuple[str, ...], commands: tuple[str, ...]) -> int:
    """mini-swe-agent's ``InteractiveAgent._should_ask_confirmation``: a command runs without
    asking when ``re.match`` of any whitelist pattern finds it."""
    return sum(1 for c in commands if any(re.match(p, c) for p in patterns))


def _judge_seconds(folder: Path, repeats: int) -> list[float]:
    from miniagent.approval import CommandRules
    from miniagent.toolbox import Workspace

    rules = CommandRules(list(RULES), workspace=Workspace(folder))
    line = "git status && git diff -- src/a.py && timeout 60 pytest -q -k 'a and not b' 2>&1"
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        rules.judge(line)
        samples.append(time.perf_counter() - started)
    return samples


def _corpus_rows(report: Report) -> None:
    section = report.section("unattended_rules", "Command rules: the public bypass corpus")
    with tempfile.TemporaryDirectory(prefix="bench-rules-") as name:
        folder = Path(name)
        prepare_workspace(folder)
        ours = _admitted_by_miniagent(folder, tuple(b.command for b in CORPUS))
        ours_allowed = _admitted_by_miniagent(folder, ALLOWED)
        judge = _judge_seconds(folder, 200 if report.quick else 1000)
    total = len(CORPUS)
    section.rows.append(
        Row(
            "bypasses admitted: miniagent command_rules",
            f"{ours} of {total}",
            "0",
            ours == 0,
            f"ordinary uses still run: {ours_allowed} of {len(ALLOWED)}",
        )
    )
    for label, patterns in MINI_SWE_WHITELISTS.items():
        admitted = _admitted_by_whitelist(patterns, tuple(b.command for b in CORPUS))
        allowed = _admitted_by_whitelist(patterns, ALLOWED)
        section.rows.append(
            Row(
                f"bypasses admitted: mini-swe-agent whitelist_actions, {label}",
                f"{admitted} of {total}",
                "",
                None,
                f"ordinary uses run: {allowed} of {len(ALLOWED)}",
            )
        )
    section.rows.append(
        Row(
            "time to judge a 4-command line",
            f"p50 {fmt_us(median(judge))}, p99 {fmt_us(percentile(judge, 99))}",
        )
    )
    section.notes.append(
        f"Rules allowing only {', '.join(RULES)}; the {total} commands of `bench/bypass_corpus.py` come from "
        "public reports (Claude Code `Bash(...)` rules, codex execpolicy, agent allow-lists: chaining, "
        "substitution, wrappers, `git -c`/`--output`, wildcard injection, quoting tricks). mini-swe-agent "
        "runs a command without asking when `re.match` of a `whitelist_actions` pattern finds it; the same "
        "rules written as its docs show them, and anchored, are tried offline on the same strings."
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _command_seconds(folder: Path, sandbox: str, repeats: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (of the reaped children and of this process) per command."""
    from miniagent.toolbox import default_tools

    run = next(t for t in default_tools(folder, sandbox=sandbox) if t.name == "run_command")
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), _children_cpu() + time.process_time()
        run.execute({"command": "true"}, None)
        walls.append(time.perf_counter() - started)
        cpus.append(_children_cpu() + time.process_time() - cpu)
    return walls, cpus


def _sandbox_rows(report: Report) -> None:
    from miniagent.process.sandbox import landlock_abi

    section = report.section("unattended_sandbox", "Kernel sandbox for commands")
    abi = landlock_abi()
    if abi < 4:
        report.skip("sandbox overhead", f"Landlock ABI {abi} on this kernel (needs 4)")
        return
    rounds = 10 if report.quick else 30
    plain: list[float] = []
    confined: list[float] = []
    cpu_plain: list[float] = []
    cpu_confined: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as name:
        folder = Path(name)
        _command_seconds(folder, "workspace", 3)  # warm-up
        for _ in range(rounds):  # interleaved: a load change hits both alike
            walls, cpus = _command_seconds(folder, "none", 3)
            plain, cpu_plain = plain + walls, cpu_plain + cpus
            walls, cpus = _command_seconds(folder, "workspace", 3)
            confined, cpu_confined = confined + walls, cpu_confined + cpus
    overhead = median(confined) - median(plain)
    cpu_overhead = median(cpu_confined) - median(cpu_plain)
    section.rows.append(
        Row(
            "sandbox overhead per command (p50 confined - p50 plain)",
            fmt_ms(overhead),
            f"<= {SANDBOX_TARGET_SECONDS * 1e3:.0f} ms",
            overhead <= SANDBOX_TARGET_SECONDS,
            f"Landlock ABI {abi}",
        )
    )
    section.rows.append(
        Row(
            "CPU time added per command (p50 confined - p50 plain)",
            fmt_ms(cpu_overhead),
            "",
            None,
            "user + system time of this process and the reaped children: what the load does not inflate",
        )
    )
    section.rows.append(
        Row("run_command `true`, plain", f"p50 {fmt_ms(median(plain))}, p99 {fmt_ms(percentile(plain, 99))}")
    )
    section.rows.append(
        Row(
            "run_command `true`, --sandbox workspace",
            f"p50 {fmt_ms(median(confined))}, p99 {fmt_ms(percentile(confined, 99))}",
        )
    )
    section.notes.append(
        f"{len(plain)} commands each way, interleaved in rounds of 3. The confined command's reaper child "
        "makes the private TMPDIR, builds the Landlock ruleset (the children of `/` and of the home folder, "
        "split around the hidden folders), installs the seccomp filter and drops capabilities before it "
        "runs `/bin/sh -c true`; the plain one runs the same reaper without it. Wall times on a loaded "
        "machine grow with the load (see the load average); the CPU row does not."
    )


def run(report: Report, quick: bool) -> None:
    _corpus_rows(report)
    _sandbox_rows(report)
