"""Shared fixtures: the engine, recorded runs, and the no-leftover-process guard."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from ddp_viz.model import protocol

DATA = Path(__file__).parent / "data"
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Deal the tests out to the workers like cards, dearest first, so that each worker's
    share holds as many slow runs as the other's.

    With ``--dist worksteal`` (``make test``), each worker starts on one contiguous part of
    this list and takes the tail of the other's once its own is done. Sorted dearest-first
    alone, the first worker's part held every real run: it worked for ten minutes while the
    other was done in five. Dealt, each part starts with its slow runs and ends with
    sub-second tests, which are the ones taken to even the two out at the end. (``slow``:
    about 10 s or more on two busy cores; mark a test so when it grows there.)"""

    def cost(item: pytest.Item) -> int:
        if any(item.iter_markers("slow")):
            return 0
        return 1 if any(item.iter_markers("gloo")) else 2

    ranked = sorted(items, key=cost)
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    items[:] = [item for hand in range(workers) for item in ranked[hand::workers]]
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        for item in items:
            item.add_marker(pytest.mark.timeout(STATS_TIMEOUT), append=False)


# mutmut's first pass (``make mutants``) runs the tests once with every function of the
# mutated modules wrapped to record which test calls it: a window test that draws every frame
# of a run then takes several times its usual time, and one test over ``--timeout`` (20 s, the
# mutants' limit) fails the whole pass (mutmut stops at the first failure). That pass runs no
# mutant, so nothing can loop: its tests get this limit instead (the marker, put first, wins).
STATS_TIMEOUT = 600


# What a system lacks, by marker: such a test is skipped there, saying why (CI runs Linux,
# macOS and Windows: .github/workflows/ci.yml).
UNSUPPORTED = {
    "posix_signals": (os.name != "posix", "no SIGKILL or process groups on Windows"),
    "netns": (not sys.platform.startswith("linux"), "network namespaces are Linux's"),
}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for name, (lacking, reason) in UNSUPPORTED.items():
        if lacking and any(item.iter_markers(name)):
            pytest.skip(f"{name}: {reason}")


# Processes started by session-wide fixtures (and their descendants) are not leaks.
SHARED_ROOTS: set[int] = set()

# Every process this test run starts carries this mark in its environment (children inherit
# it unless a test hands them a made-up environment). A process whose parent died first is
# reparented to PID 1 or a subreaper and is no longer among this run's descendants; the mark
# still says it is ours. Another run's processes carry another value.
RUN_MARK = "DDP_VIZ_TEST_RUN"
os.environ[RUN_MARK] = f"{os.getpid()}-{uuid.uuid4().hex}"


def _descends_from_shared(proc: psutil.Process) -> bool:
    try:
        return any(p.pid in SHARED_ROOTS for p in [proc, *proc.parents()])
    except psutil.Error:
        return False


def _children() -> dict[int, psutil.Process]:
    return {p.pid: p for p in psutil.Process().children(recursive=True)}


def _marked(pids: set[int]) -> dict[int, psutil.Process]:
    """The processes of ``pids`` whose environment carries this run's mark."""
    out = {}
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.environ().get(RUN_MARK) == os.environ[RUN_MARK]:
                out[pid] = p
        except psutil.Error:  # gone, a zombie, or not ours to read
            pass
    return out


def still_running(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Processes of ``procs`` still running after ``timeout`` s. A zombie has exited: it only
    waits for its parent (or, for orphans, the machine's init) to collect its status."""
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    out = []
    for p in alive:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Fail a test that leaves a process of this test run alive: a descendant of this
    process, or one with the run's mark that was orphaned (reparented away from us)."""
    before = set(_children())
    before_pids = set(psutil.pids())
    yield
    found = {pid: p for pid, p in _children().items() if pid not in before}
    for pid, p in _marked(set(psutil.pids()) - before_pids - {os.getpid()}).items():
        found.setdefault(pid, p)
    new = [p for p in found.values() if not _descends_from_shared(p)]
    alive = still_running(new, timeout=5)
    for p in alive:
        p.kill()
    assert not alive, f"test left processes behind: {[(p.pid, p.name()) for p in alive]}"


@pytest.fixture(scope="session", autouse=True)
def lent_engine_stops() -> Iterator[None]:
    """The window tests' shared engine (``tests/qt/lent_engine.py``), if one was started,
    stops with the session."""
    yield
    lent = sys.modules.get("tests.qt.lent_engine")
    if lent is not None:
        lent.close_shared()


@pytest.fixture(scope="session")
def engine() -> Iterator:
    """One real engine (with its warm rank pool) shared by the engine tests."""
    from ddp_viz.client import EngineClient

    client = EngineClient()
    SHARED_ROOTS.add(client.proc.pid)
    client.wait_for(protocol.EngineReady, timeout=60)
    yield client
    client.close()
    SHARED_ROOTS.discard(client.proc.pid)


def load_recording(name: str) -> list[protocol.Event]:
    """Events recorded from a real run (see tests/data/README.md for how they were made)."""
    lines = (DATA / name).read_text().splitlines()
    return [protocol.decode(line) for line in lines if line.strip()]


@pytest.fixture
def default_events() -> list[protocol.Event]:
    return load_recording("default-run.jsonl")


def assert_lesson_numbers(step) -> None:  # step: timeline.StepRecord
    """The worked example of the lesson brief, step 0 with two ranks."""
    from ddp_viz.model.timeline import scalar

    assert step.ranks[0].local == {"weight": [-10.5], "bias": [-6.5]}
    assert step.ranks[1].local == {"weight": [-44.5], "bias": [-12.5]}
    for r in (0, 1):
        assert step.ranks[r].averaged == {"weight": [-27.5], "bias": [-9.5]}
        assert scalar(step.ranks[r].params, "weight") == pytest.approx(0.775, abs=1e-6)
        assert scalar(step.ranks[r].params, "bias") == pytest.approx(0.095, abs=1e-6)


@pytest.fixture
def make_window(qtbot):
    """Main windows with instant animations and no engine; all closed and checked after."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.main_window import MainWindow
    from ddp_viz._qt.theme import apply_theme
    from ddp_viz.model.theme import load_theme

    made = []

    def make(size: tuple[int, int] = (1280, 800), **kwargs):
        w = MainWindow(phase_ms=0, refresh_ms=1, **kwargs)
        apply_theme(QApplication.instance(), w.theme)  # as the app does when it starts
        qtbot.addWidget(w)
        w.resize(*size)
        w.show()
        w.activateWindow()  # shortcuts only reach the active window
        qtbot.waitUntil(w.isActiveWindow, timeout=10_000)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()
    QApplication.processEvents()
    # what close() scheduled for deletion goes now: processEvents() leaves deleteLater()'s
    # events for the event loop, and they were run at some later wait of another test, which
    # once crashed a worker (a segfault listing the top-level widgets below)
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    apply_theme(QApplication.instance(), load_theme("light"))  # the next test starts plain
    visible = [t for t in QApplication.topLevelWidgets() if t.isVisible()]
    assert not visible, f"test left windows open: {visible}"


@pytest.fixture
def window(make_window):
    """A main window with instant animations, no engine started; closed and checked after."""
    return make_window()


@pytest.fixture
def settings(tmp_path):
    """A QSettings file of the test's own: never the user's real preferences."""
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "ddp-viz.ini"), QSettings.Format.IniFormat)
