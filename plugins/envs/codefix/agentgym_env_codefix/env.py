"""``codefix``: find and fix an injected bug in a HumanEval solution, with tests as feedback.

The agent sees ``solution.py`` with line numbers and acts with ``view``, ``run``, ``edit``
and ``submit``. Tests run in the sandbox (:mod:`.sandbox`). The reward, given once at
``submit``, is the fraction of tests that pass; success means all of them pass.
"""
from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from typing import Any

from agentgym_core import BaseEnv, config_from

from .problems import Task, tasks
from .sandbox import Limits, RunResult, run_tests

INSTRUCTION = """\
You are debugging Python. The file solution.py defines a function with one small bug (a wrong
operator, an off-by-one constant, a flipped comparison, swapped arguments, ...). Make every
test pass, then submit. The reward is the fraction of tests passing when you submit.

Reply with your reasoning on lines starting with "Thought:", then one action on a line
starting with "Action:"; an edit's new code goes on the lines after the action. Actions:
  view                 show solution.py with line numbers
  run                  run the tests and show which fail
  edit N               replace line N with the code on the following lines
  edit N-M             replace lines N to M (inclusive) with the code on the following lines
                       (no code after the command deletes the lines)
  edit function        replace the whole function with the def on the following lines
  submit               run the tests a last time and end the episode

Keep the indentation of the code you write. Example:
Thought: line 16 should use a strict comparison.
Action: edit 16
                if distance < threshold:
"""

HELP = ("Write 'Action: <action>' with one of: view | run | submit | edit N | edit N-M | edit function; "
        "an edit's new code goes on the lines after the action.")
_EDIT = re.compile(r"^edit\s+(?:(?P<fn>function|func|def)|(?P<a>\d+)\s*(?:-\s*(?P<b>\d+))?)\s*$", re.IGNORECASE)
_ACTION_LINE = re.compile(r"^\s*Action\s*:\s*(.*)$", re.IGNORECASE)
_BARE = re.compile(r"^\s*(view|run|submit)\s*$", re.IGNORECASE)


def split_action(text: str) -> tuple[str, list[str]]:
    """The command line and the lines after it, from a reply that may hold ``Thought:`` lines.

    The command is the first ``Action:`` line; without one, the first line that is a bare
    command (``run``, ``edit 3-4``, ...); else the first non-empty line (an invalid action).
    """
    lines = (text or "").splitlines()
    for i, line in enumerate(lines):
        m = _ACTION_LINE.match(line)
        if m:
            return m.group(1).strip(), lines[i + 1:]
    for i, line in enumerate(lines):
        if _BARE.match(line) or _EDIT.match(line.strip()):
            return line.strip(), lines[i + 1:]
    return next((line.strip() for line in lines if line.strip()), ""), []


@dataclass
class CodeFixConfig:
    #: Wall-clock seconds for one test run (all tests).
    time_limit: float = 15.0
    #: Seconds per test.
    per_test_time: float = 1.0
    #: Memory limit of the test process.
    memory_mb: int = 512
    #: Failing tests shown in full after ``run``.
    show_failures: int = 3

    def __post_init__(self) -> None:
        if self.time_limit <= 0 or self.per_test_time <= 0:
            raise ValueError("env.time_limit and env.per_test_time must be > 0")
        if self.memory_mb < 128:
            raise ValueError(f"env.memory_mb must be >= 128 (the interpreter needs it), got {self.memory_mb}")


def numbered(code: str) -> str:
    lines = code.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


def _strip_fences(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.strip().startswith("```")]


class CodeFixEnv(BaseEnv):
    """A HumanEval program with one injected bug; tests run sandboxed."""

    instruction = INSTRUCTION
    #: ``free``: the env reads the whole reply, since an edit spans several lines.
    action_format = "free"
    Config = CodeFixConfig

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.config = cfg = config_from(self, options)
        self.limits = Limits(time_s=cfg.time_limit, per_test_s=cfg.per_test_time, memory_mb=cfg.memory_mb)
        self.show_failures = cfg.show_failures
        self.tasks = tasks()
        self.task: Task | None = None
        self.code = ""
        self.done = False

    # -- self-description ------------------------------------------------------------------
    def splits(self) -> dict[str, list[int]]:
        return {name: [t.index for t in self.tasks if t.split == name] for name in ("train", "test")}

    def category(self, task_id: int) -> str | None:
        return self.tasks[task_id].mutation.kind

    # -- the episode -------------------------------------------------------------------------
    def reset(self, *, task_id: int | None = None, seed: int | None = None) -> str:
        if task_id is None:
            train = self.splits()["train"]
            task_id = random.Random(seed).choice(train) if seed is not None else train[0]
        if not 0 <= task_id < len(self.tasks):
            raise ValueError(f"codefix task_id must be in [0, {len(self.tasks)}), got {task_id}")
        self.task = self.tasks[task_id]
        self.code = self.task.buggy_source
        self.done = False
        p = self.task.problem
        return (f"Task {task_id} ({p.task_id}): the function `{p.entry_point}` in solution.py has a bug; "
                f"{p.n_tests} tests check it.\n\nsolution.py:\n{numbered(self.code)}")

    def step(self, action: str) -> tuple[str, float, bool, dict]:
        if self.task is None:
            return "No task: call reset first.", 0.0, False, {"invalid_action": True}
        if self.done:
            return "The episode is over (you submitted).", 0.0, True, {"invalid_action": True}
        if "\n" not in (action or "") and "\\n" in (action or ""):
            action = action.replace("\\n", "\n")  # one-line input (agentgym env play): "edit 3\n    x = 1"
        head, body = split_action(action)
        command = head.split()[0].lower() if head.split() else ""
        if command == "view" and len(head.split()) == 1:
            return f"solution.py:\n{numbered(self.code)}", 0.0, False, {}
        if command == "run" and len(head.split()) == 1:
            result = self._run()
            return self._report(result), 0.0, False, self._info(result)
        if command == "submit" and len(head.split()) == 1:
            result = self._run()
            self.done = True
            info = self._info(result)
            info["success"] = result.total > 0 and result.passed == result.total
            verdict = "All tests pass: solved." if info["success"] else "Not all tests pass."
            return f"Submitted. {self._report(result)}\n{verdict}", float(result.fraction), True, info
        if command == "edit":
            return self._edit(head, body)
        return (f"Unknown action {head[:60]!r}. {HELP}", 0.0, False, {"invalid_action": True})

    def close(self) -> None:
        self.task = None

    # -- actions -----------------------------------------------------------------------------
    def _run(self) -> RunResult:
        p = self.task.problem
        return run_tests(self.code, p.test, p.entry_point, p.n_tests, self.limits)

    def _info(self, result: RunResult) -> dict[str, Any]:
        return {"passed": result.passed, "total": result.total, "violations": list(result.violations)}

    def _report(self, result: RunResult) -> str:
        parts = [f"Tests: {result.passed}/{result.total} passed."]
        if result.error:
            parts.append(f"Error: {result.error}")
        failures = [t for t in result.tests if not t.get("ok") and t.get("source")]
        for t in failures[: self.show_failures]:
            parts.append(f"FAILED {t['source']}\n  -> {t.get('error', 'failed')}")
        if len(failures) > self.show_failures:
            parts.append(f"... and {len(failures) - self.show_failures} more failing tests")
        if result.violations:
            parts.append("Sandbox blocked: " + "; ".join(result.violations[:5]))
        if result.output.strip():
            parts.append("Output:\n" + result.output.strip()[:1000])
        return "\n".join(parts)

    def _edit(self, head: str, body: list[str]) -> tuple[str, float, bool, dict]:
        m = _EDIT.match(head)
        if not m:
            return (f"Cannot read {head[:60]!r}: write 'edit N', 'edit N-M' or 'edit function' with the new code "
                    "on the following lines.", 0.0, False, {"invalid_action": True})
        body = _strip_fences(body)
        while body and not body[-1].strip():
            body.pop()
        lines = self.code.splitlines()
        if m.group("fn"):
            span = self._function_span()
            if not body or span is None:
                why = "the complete new def on the following lines" if span else \
                    f"solution.py to parse and define {self.task.problem.entry_point}(); use 'edit N-M' instead"
                return f"'edit function' needs {why}.", 0.0, False, {"invalid_action": True}
            start, end = span
        else:
            start = int(m.group("a"))
            end = int(m.group("b") or start)
            if not 1 <= start <= end <= len(lines):
                return (f"Lines {start}-{end} are outside solution.py (lines 1-{len(lines)}).", 0.0, False,
                        {"invalid_action": True})
        lines[start - 1:end] = body
        self.code = "\n".join(lines) + "\n"
        note = ""
        try:
            ast.parse(self.code)
        except SyntaxError as exc:
            note = f"\nWarning: solution.py now has a syntax error at line {exc.lineno}: {exc.msg}."
        shown_end = start + max(len(body), 1) - 1
        lo, hi = max(1, start - 2), min(len(self.code.splitlines()), shown_end + 2)
        excerpt = "\n".join(numbered(self.code).splitlines()[lo - 1:hi])
        return f"Replaced lines {start}-{end} with {len(body)} line(s).{note}\n{excerpt}", 0.0, False, {}

    def _function_span(self) -> tuple[int, int] | None:
        """Lines (1-based, inclusive) of the entry-point def, decorators included."""
        try:
            tree = ast.parse(self.code)
        except SyntaxError:
            return None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == self.task.problem.entry_point:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                return first, node.end_lineno
        return None
