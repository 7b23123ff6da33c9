"""The watch's thread in the window's process (``kinds/watched/qt/live``), with its command
replaced: no torchrun here."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from ddp_viz.kinds.watched.qt import live


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own nice is Linux's")
def test_the_watch_thread_decodes_below_the_windows_thread(qtbot, monkeypatch) -> None:
    seen: dict[str, int] = {}

    def command(*_a: object, **_k: object) -> int:  # runs on the watch's thread
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return 0

    monkeypatch.setattr(live, "watch_live", command)
    watch = live.LiveWatch(["true"], None, None)
    with qtbot.waitSignal(watch.ended, timeout=10_000):
        watch.start()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen["nice"] == min(19, mine + live.WATCH_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # not the window's
