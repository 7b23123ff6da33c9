"""Where a blocked rank says it waits (no torch, no Qt, no real run): the frames a heartbeat
reads from another thread, the heartbeat itself around a wait inside torch's files (a C call
made from a function compiled under torch's file name, released by the test once the beats it
asserts have come), and gloo's words as an attempt hands them on.

The beat's period is shortened for the test (the module's constants): the rank's own quarter
second would only make the test slow."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from ddp_viz.kinds.evaluation import waits
from ddp_viz.kinds.evaluation.waits import (
    DEPTH,
    Heartbeat,
    LockedOutbox,
    clean_error,
    frames_of,
    timed,
)

TORCH_FILE = "/home/u/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"
LOGGER_FILE = "/home/u/.venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py"


def compiled(source: str, filename: str, name: str) -> Callable:
    """A function whose frames say they are in ``filename`` (torch's, here)."""
    space: dict = {}
    exec(compile(source, filename, "exec"), space)
    return space[name]


# a wait inside torch: the innermost Python frame is torch's, the block is a C call in it
barrier = compiled(
    "def barrier(lock):\n    lock.acquire(timeout=10)\n    lock.release()\n", TORCH_FILE, "barrier"
)
# torch's logging wrapper around its collectives: a frame that names nothing
wrapper = compiled("def wrapper(call):\n    return call()\n", LOGGER_FILE, "wrapper")


class Outbox:
    """What the heartbeat hands its events to; ``on_add`` runs after each add."""

    def __init__(self, on_add: Callable[[], None] = lambda: None) -> None:
        self.calls: list[tuple] = []
        self.on_add = on_add

    def add(self, *events, now: bool = False) -> None:
        self.calls.append(("add", events, now))
        self.on_add()

    def flush(self) -> None:
        self.calls.append(("flush",))


def blocked(target: Callable[[], None]) -> tuple[threading.Thread, threading.Lock]:
    """A thread blocked in ``target`` until the returned lock is released."""
    lock = threading.Lock()
    lock.acquire()
    started = threading.Event()

    def run() -> None:
        started.set()
        target(lock)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started.wait(5)
    return thread, lock


def wait_in_frames(thread: threading.Thread, stop: str = "", first: str = "") -> list[str]:
    """The thread's frames once its innermost one is ``first`` (it may not be there yet)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        where = frames_of(thread.ident, stop)
        if where and where[0].startswith(first):
            return where
    raise AssertionError(f"never reached {first}")


def nested(depth: int, lock: threading.Lock) -> None:
    if depth == 0:
        barrier(lock)
    else:
        nested(depth - 1, lock)


def test_a_threads_frames_innermost_first_up_to_the_depth() -> None:
    thread, lock = blocked(lambda lock: nested(8, lock))
    try:
        where = wait_in_frames(thread, first="barrier ")
        assert len(where) == DEPTH == 6
        assert where[0].startswith("barrier (torch/distributed/distributed_c10d.py:2)")
        assert all(w.startswith("nested (test_waits.py:") for w in where[1:])
    finally:
        lock.release()
        thread.join(5)


def test_the_frames_stop_at_the_first_in_the_stop_file_included() -> None:
    thread, lock = blocked(lambda lock: nested(3, lock))
    try:
        where = wait_in_frames(thread, stop="test_waits.py", first="barrier ")
        assert len(where) == 2
        assert where[1].startswith("nested (test_waits.py:")
        # a stop that no frame's file ends with: the depth ends it
        assert len(frames_of(thread.ident, "nowhere.py")) == DEPTH
    finally:
        lock.release()
        thread.join(5)


def test_torchs_logging_wrapper_is_left_out() -> None:
    thread, lock = blocked(lambda lock: wrapper(lambda: barrier(lock)))
    try:
        where = wait_in_frames(thread, first="barrier ")
        assert where[0].startswith("barrier (torch/")
        assert "<lambda> (test_waits.py:" in where[1]
        assert not any("c10d_logger" in w for w in where)
        assert "<lambda> (test_waits.py:" in where[2]  # the frame past the wrapper is kept
    finally:
        lock.release()
        thread.join(5)


# a decorator's inner function is often called ``wrapper`` too: only torch's logger is left out
own_wrapper = compiled("def wrapper(call):\n    return call()\n", "/w/app/train.py", "wrapper")
logger_helper = compiled("def helper(call):\n    return call()\n", LOGGER_FILE, "helper")


def test_a_wrapper_of_another_file_and_another_function_of_the_loggers_are_kept() -> None:
    thread, lock = blocked(lambda lock: own_wrapper(lambda: logger_helper(lambda: barrier(lock))))
    try:
        where = wait_in_frames(thread, first="barrier ")
        assert "<lambda> (test_waits.py:" in where[1]
        assert where[2].startswith("helper (torch/distributed/c10d_logger.py:2)")
        assert "<lambda> (test_waits.py:" in where[3]
        assert where[4].startswith("wrapper (train.py:2)")
    finally:
        lock.release()
        thread.join(5)


def test_a_thread_that_is_gone_has_no_frames() -> None:
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    assert frames_of(thread.ident) == []


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits, "BEAT_S", 0.005)
    monkeypatch.setattr(waits, "QUIET_S", 0.05)


def test_a_heartbeat_says_where_the_rank_waits_inside_torch(quick) -> None:
    lock = threading.Lock()
    lock.acquire()

    def on_add() -> None:
        if sum(c[0] == "add" for c in outbox.calls) == 3:
            lock.release()

    outbox = Outbox(on_add)
    with Heartbeat(4, 2, "wrapper", LockedOutbox(outbox), stop="nowhere.py") as hb:
        # what came before the wait reaches the window first
        assert outbox.calls == [("flush",)]
        barrier(lock)
    assert not hb._thread.is_alive()
    adds = [c for c in outbox.calls if c[0] == "add"]
    assert len(adds) == hb.beats == 3
    for _, (event,), now in adds:
        assert now is True
        assert (event.run, event.rank, event.attempt) == (4, 2, "wrapper")
        assert event.where[0].startswith("barrier (torch/distributed/distributed_c10d.py:2)")
        assert event.where[1].startswith("test_a_heartbeat_says_where_the_rank_waits_inside_torch")
        assert event.since == hb.since
        # no beat before the quiet half second (here: its shortened stand-in) has passed
        assert event.now - event.since >= 0.05
    nows = [e.now for _, (e,), _ in adds]
    assert nows == sorted(nows) and len(set(nows)) == 3


def test_a_beat_stops_at_the_frame_in_the_stop_file(quick) -> None:
    lock = threading.Lock()
    lock.acquire()
    outbox = Outbox(lambda: lock.release())
    with Heartbeat(1, 3, "wrapper", LockedOutbox(outbox), stop="test_waits.py"):
        barrier(lock)
    (event,) = outbox.calls[1][1]
    assert len(event.where) == 2  # torch's barrier, then this test's frame: no further
    assert event.where[1].startswith("test_a_beat_stops_at_the_frame_in_the_stop_file (")


def test_no_beat_while_the_rank_is_outside_torch(quick, monkeypatch) -> None:
    """The main thread blocked in the script's own code: the beats look and send nothing."""
    lock = threading.Lock()
    lock.acquire()
    looked = []
    original = waits.frames_of

    def here(where: list[str]) -> bool:
        return bool(where) and where[0].startswith("test_no_beat_while")

    def counting(thread_id: int, stop: str = "") -> list[str]:
        where = original(thread_id, stop)
        looked.append(where)
        # let go after five looks at this test's own frame: the first looks may still find
        # the main thread starting the heartbeat's thread (in threading's code, on a busy
        # machine), which is outside torch as well
        if sum(map(here, looked)) == 5:
            lock.release()
        return where

    monkeypatch.setattr(waits, "frames_of", counting)
    outbox = Outbox()
    with Heartbeat(1, 0, "module", LockedOutbox(outbox)) as hb:
        released = lock.acquire(timeout=10)  # a C call made from this file
    assert released and sum(map(here, looked)) >= 5
    assert hb.beats == 0 and outbox.calls == [("flush",)]


def test_the_locked_outbox_passes_every_call_on() -> None:
    outbox = Outbox()
    locked = LockedOutbox(outbox)
    locked.add("a", "b")
    locked.add("c", now=True)
    locked.flush()
    assert outbox.calls == [("add", ("a", "b"), False), ("add", ("c",), True), ("flush",)]


def test_gloos_words_without_the_python_stack_and_characters_no_font_draws() -> None:
    said = "[../gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 3000ms for recv"
    exc = RuntimeError(f"  {said}\n\nAt:\n  /x/torch/distributed.py(12): barrier\n")
    assert clean_error(exc) == said
    assert clean_error(RuntimeError("peer gone 🔥 ")) == "peer gone"
    assert clean_error(RuntimeError("é ü ☃ ok")) == "é ü ☃ ok"  # within the BMP: kept
    assert clean_error(RuntimeError("x" * 700)) == "x" * 600
    assert clean_error(RuntimeError("edge \uffff")) == "edge \uffff"  # the plane's last one
    assert clean_error(RuntimeError("past \U00010000 it")) == "past  it"  # the next: left out


def test_an_attempt_is_timed_and_its_runtime_error_handed_on() -> None:
    calls = []
    seconds, error = timed(lambda: calls.append(1))
    assert calls == [1] and error == "" and 0 <= seconds < 5

    def fails() -> None:
        raise RuntimeError("Timed out waiting 3000ms\n\nAt:\n  frame")

    seconds, error = timed(fails)
    assert error == "Timed out waiting 3000ms" and 0 <= seconds < 5

    def other() -> None:
        raise ValueError("not gloo")

    with pytest.raises(ValueError):
        timed(other)
