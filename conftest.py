"""Session setup for every test of the repository (tests/ and plugins/*/*/tests)."""
from __future__ import annotations

import signal

import pytest

#: Set when the session started with SIGINT ignored (see pytest_configure).
RESTORED: list[str] = []


def pytest_configure(config):
    """A suite started as a background job of a shell without job control (``pytest ... &`` in a
    script, ``nohup``, a CI step) inherits SIGINT *ignored*, and every process a test starts inherits
    it across exec: the tests that send Ctrl-C to a launcher or a trainer then wait forever. (No test
    ignores SIGINT: tests/core/test_core_sigint.py runs the suite's check in such a background job.)
    The tests get SIGINT back, as in a terminal's foreground job."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        RESTORED.append("SIGINT was ignored when pytest started (a background job without job control); "
                        "restored for the tests, which send Ctrl-C to the processes they start")


def pytest_terminal_summary(terminalreporter):
    for line in RESTORED + WORKER_LINES:
        terminalreporter.write_line(line)


#: Lines a pytest-xdist worker hands the controller for the end of the report (``config.workeroutput``
#: ["summary_lines"]; tests/packaging/conftest.py's step timings): a worker's own summary is not shown.
WORKER_LINES: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    WORKER_LINES.extend(getattr(node, "workeroutput", {}).get("summary_lines", []))


#: Test files one pytest-xdist worker runs together, in order, because they share costly session fixtures: the
#: packaging tests' wheels and venv (tests/packaging/conftest.py: the minimal install, then the rest on top).
#: (xdist's own ``xdist_group`` mark does nothing under pytest 9.2: it renames ``item._nodeid``, which pytest no
#: longer reads.)
SAME_WORKER = {"tests/packaging/test_packaging_minimal.py": "packaging",
               "tests/packaging/test_packaging_wheels.py": "packaging"}


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the tests marked ``slow`` are handed out first (in their order, then the rest in
    theirs): a long test that came last in collection order would keep one worker busy after the other ran
    out of work. (Every worker collects the same order, as xdist requires.)"""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Every test its own unit of work (as ``--dist load``), but the :data:`SAME_WORKER` files' tests one unit:
    the units with most tests are handed out first, so the packaging group starts at once."""
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SAME_WORKER.get(nodeid.split("::", 1)[0], nodeid)

    return Grouped(config, log)
