"""The watched rank's failure hooks in-process (no ranks): the report names the innermost
frame in the user's code, ddp-viz's own frames leave the printed traceback, the failure is
sent once, and a process forked from the rank says nothing."""

from __future__ import annotations

import os
import traceback

import pytest

pytest.importorskip("torch")

from ddp_viz.kinds.watched.watch import calls, failure


def _user_code(x: int) -> int:
    raise ValueError(f"bad value {x}")


def _raised() -> BaseException:
    wrapped = calls._wrap("all_reduce", _user_code)  # a ddp-viz frame between the user's
    try:
        wrapped(3)
    except ValueError as exc:
        return exc
    raise AssertionError("no error")


def test_the_innermost_user_frame_is_named_and_ours_are_left_out() -> None:
    exc = _raised()
    names = [fs.name for fs in traceback.extract_tb(exc.__traceback__)]
    assert names == ["_raised", "wrapper", "_user_code"]  # ours in the middle
    e = failure.failure_event(exc, exc.__traceback__, 12.5)
    line = _user_code.__code__.co_firstlineno + 1
    assert e.site == f"test_watch_failure_hooks.py:{line} in _user_code"
    assert (e.type, e.message, e.at) == ("ValueError", "bad value 3", 12.5)
    assert [s.split(":")[0] for s in e.stack] == ["test_watch_failure_hooks.py"] * 2
    stripped = failure.without_ours(exc.__traceback__)
    assert [fs.name for fs in traceback.extract_tb(stripped)] == ["_raised", "_user_code"]


def test_the_failure_is_sent_once_and_never_from_a_forked_child(monkeypatch) -> None:
    sent: list[str] = []
    monkeypatch.setenv("DDP_VIZ_ADDR", "127.0.0.1:9")
    monkeypatch.setattr(failure, "_send_alone", sent.append)
    monkeypatch.setattr(failure, "STATE", {**failure.STATE, "watch": None, "sent": False})
    exc = _raised()
    failure.STATE["pid"] = os.getpid() + 1  # as in a DataLoader worker forked from the rank
    failure.report(exc, exc.__traceback__, 1.0)
    assert sent == []
    failure.STATE["pid"] = os.getpid()
    failure.report(exc, exc.__traceback__, 1.0)
    failure.report(exc, exc.__traceback__, 2.0)
    assert len(sent) == 1 and '"type":"ValueError"' in sent[0].replace(" ", "")
