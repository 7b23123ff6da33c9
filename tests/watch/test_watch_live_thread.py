"""The watch's thread in the window's process (``kinds/watched/qt/live``), with its command
replaced: no torchrun here."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from ddp_viz.kinds.watched.qt import live

NICE_OF_CHILD = "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's own nice is Linux's")
def test_the_watch_thread_decodes_below_the_window_not_the_users_ranks(qtbot, monkeypatch) -> None:
    """The thread that decodes the ranks' events runs at nice +10; the command it starts
    (torchrun, so every rank) keeps the window's: a process inherits the nice of the thread
    that starts it, and lowering the thread first ran the user's training at +10 too."""
    seen: dict[str, int] = {}

    def command(cmd, record, listen, budget, deliver, started, relay=None) -> int:
        # as watch_live does: start the command, then say so
        child = subprocess.Popen(
            [sys.executable, "-c", NICE_OF_CHILD], stdout=subprocess.PIPE, text=True
        )
        started(child.pid)
        seen["command"] = int(child.communicate(timeout=60)[0])
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return 0

    monkeypatch.setattr(live, "watch_live", command)
    watch = live.LiveWatch(["true"], None, None)
    with qtbot.waitSignal(watch.ended, timeout=30_000):
        watch.start()
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert seen["command"] == mine  # the user's ranks: as the window was started
    assert seen["thread"] == min(19, mine + live.WATCH_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the window's
