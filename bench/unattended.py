"""Unattended runs: the bypass corpus against the command rules (miniagent's and mini-swe-agent's
whitelist idea, side by side, offline) and the cost of the kernel sandbox per command."""

from __future__ import annotations

import re
import resource
import tempfile
import time
from pathlib import Path

from .bypass_corpus import ALLOWED, CORPUS, MINI_SWE_WHITELISTS, RULES, prepare_workspace
from .common import Report, Row, fmt_ms, fmt_us, load_average, median, percentile

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


def _confine_seconds(folder: Path, repeats: int) -> tuple[list[float], list[float]]:
    """The sandbox's own work per command, timed where it happens: in this process (the hidden
    paths, the ruleset's freshness, the reaper's options) and in the child (loading ``_confine``
    and confining itself with the inherited ruleset: Landlock, seccomp, capabilities)."""
    import subprocess
    import sys

    from miniagent.process.children import contained
    from miniagent.process.environment import scrubbed_environ
    from miniagent.process.sandbox import CONFINE_MODULE, Sandbox

    box = Sandbox(folder)
    env = scrubbed_environ()
    parent, child = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        with box.confinement(env) as confinement:
            contained(["/bin/true"], 0.5, confinement.spec)
            parent.append(time.perf_counter() - started)
            script = (
                "import ctypes, sys, time; started = time.perf_counter(); "
                f"sys.path.insert(0, {str(CONFINE_MODULE.parent)!r}); import _confine; "
                f"_confine.confine({confinement.spec!r}); print(time.perf_counter() - started)"
            )
            done = subprocess.run(
                [sys.executable, "-I", "-S", "-c", script],
                capture_output=True,
                text=True,
                check=True,
                pass_fds=confinement.pass_fds,
            )
        child.append(float(done.stdout))
    box.close()
    return parent, child


def _grep_seconds(folder: Path, sandbox: str, repeats: int) -> list[float]:
    from miniagent.toolbox import default_tools

    grep = next(t for t in default_tools(folder, sandbox=sandbox) if t.name == "grep")
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        grep.execute({"pattern": "needle"}, None)
        samples.append(time.perf_counter() - started)
    return samples


def _grep_row(folder: Path, rounds: int) -> Row:
    (folder / "a.txt").write_text("a needle\n")
    plain: list[float] = []
    confined: list[float] = []
    for _ in range(rounds):
        plain += _grep_seconds(folder, "none", 3)
        confined += _grep_seconds(folder, "workspace", 3)
    note = (
        f"p50 {fmt_ms(median(plain))} plain, {fmt_ms(median(confined))} confined (the worker imports ctypes)"
    )
    label = "grep's worker: overhead of the sandbox (p50 confined - p50 plain)"
    return Row(label, fmt_ms(median(confined) - median(plain)), "", None, note)


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
        grep_folder = folder / "grep"
        grep_folder.mkdir()
        grep = _grep_row(grep_folder, max(3, rounds // 3))
        parent, child = _confine_seconds(folder, 3 * rounds)
    overhead = median(confined) - median(plain)
    cpu_overhead = median(cpu_confined) - median(cpu_plain)
    direct = median(parent) + median(child)
    section.rows.append(
        Row(
            "sandbox overhead per command: its own work, timed where it runs (p50)",
            fmt_ms(direct),
            f"<= {SANDBOX_TARGET_SECONDS * 1e3:.0f} ms",
            direct <= SANDBOX_TARGET_SECONDS,
            f"Landlock ABI {abi}; parent {fmt_ms(median(parent))} + child {fmt_ms(median(child))}",
        )
    )
    section.rows.append(
        Row(
            "sandbox overhead per command, end to end (p50 confined - p50 plain)",
            fmt_ms(overhead),
            "",
            None,
            "a difference of two medians of whole commands: the load inflates it (see the load average)",
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
    section.rows.append(grep)
    section.notes.append(
        f"{len(plain)} commands each way, interleaved in rounds of 3. The sandbox's own work per command: "
        "this process finds the hidden paths, checks that the Landlock ruleset it built once (the children "
        "of `/`, of the home folder and, for root, of `/etc`, split around the hidden paths) is still "
        "fresh, and writes the reaper's options (the private TMPDIR is made once per sandbox); the "
        "reaper loads `_confine`, restricts itself with the inherited ruleset, installs the "
        "seccomp filter and drops its capabilities before it starts the command. The end-to-end row is the "
        "difference of two medians of whole commands; wall times grow with the machine's load (see the "
        "load average), the CPU row does not. Load average (1/5/15 min) when this section ran: "
        f"{load_average()}."
    )


def run(report: Report, quick: bool) -> None:
    _corpus_rows(report)
    _sandbox_rows(report)
