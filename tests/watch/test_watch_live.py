"""``ddp-viz watch`` with the window: a real torchrun run streams into the window's session as
it trains, and stopping the window stops the whole process tree."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil
import pytest

from ddp_viz.model.timeline import RunStatus
from tests.conftest import still_running

pytestmark = pytest.mark.gloo

SCRIPT = Path(__file__).parents[1] / "data" / "watched" / "train.py"
TORCHRUN = [str(Path(sys.executable).parent / "torchrun"), "--standalone", "--nproc-per-node", "2"]


def live_window(make_window, *args: str):  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from ddp_viz.kinds.watched.qt import start_live

    window = make_window()
    result = {"code": 0}
    opts = SimpleNamespace(
        watch_cmd=[*TORCHRUN, str(SCRIPT), *args], record=None, budget=1.0, listen="127.0.0.1:0"
    )
    return window, start_live(window, opts, result), result


@pytest.mark.slow
def test_a_watched_run_streams_into_the_window_as_it_trains(qtbot, make_window) -> None:
    window, live, result = live_window(make_window, "--epochs", "2")
    assert window.lesson.id == "watched" and not window.run_action.isEnabled()
    with qtbot.waitSignal(live.ended, timeout=120_000):
        qtbot.waitUntil(lambda: len(window.session.record.steps) >= 1, timeout=120_000)
        assert window.session.record.status == RunStatus.RUNNING  # seen while it trains
    rec = window.session.record
    assert result["code"] == 0 and rec.status == RunStatus.FINISHED
    assert len(rec.complete_steps()) == 8 and all(st.averaged_agree() for st in rec.steps)
    assert "Your run · step" in window.stage.frame().all_text()
    status = window.status.text()
    assert status.startswith("Run 1 finished") and "s of training" in status
    assert status.endswith("The watched command exited with 0.")


@pytest.mark.slow
@pytest.mark.posix_signals  # Ctrl-C to a process group: Windows ends the tree outright instead
def test_closing_the_window_stops_the_whole_tree(qtbot, make_window, capfd) -> None:
    window, live, _ = live_window(make_window, "--forever")

    def streaming() -> bool:  # the session's record of this run (a new one when it starts)
        rec = window.session.record
        return len(rec.steps) >= 3 and len(rec.pids) == 2

    qtbot.waitUntil(streaming, timeout=120_000)
    rec = window.session.record
    # torchrun and each rank by the pid it reported: torchrun starts the ranks in sessions of
    # their own, so one it left behind would not be among this test's descendants
    tree = {f"rank {r}": psutil.Process(pid) for r, pid in sorted(rec.pids.items())}
    tree["torchrun"] = psutil.Process(live.pid)
    for name, p in tree.items():  # the pids are what they say they are
        assert ("train.py" if name.startswith("rank") else "torchrun") in " ".join(p.cmdline())
    capfd.readouterr()  # what the command printed while it trained
    live.stop()  # what the app does when its window closes
    left = still_running(list(tree.values()), timeout=30)
    for p in left:
        p.kill()
    assert not left, f"left running: {[n for n, p in tree.items() if p in left]}"
    # torchrun's agent turns the SIGINT into its SignalException and exits with 1 once it has
    # stopped the ranks; killed by a signal it would be 128 + the signal's number
    assert live.code == 1
    # one line says the window (or a Ctrl-C) stopped it: not the ranks' KeyboardInterrupt nor
    # torchrun's SignalException, the tracebacks of a Ctrl-C the user never typed; then the
    # report, its verdict last, as after a run that ended by itself
    out, err = capfd.readouterr()
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert "Traceback" not in out + err, lines
    assert lines[0].startswith("ddp-viz watch: stopped (the window was closed, or Ctrl-C)")
    assert "its 2 rank(s)" in lines[0]
    assert lines[1].startswith("ddp-viz: the command exited with 1; 2 rank(s)"), lines
    assert lines[-1].startswith("ddp-viz verdict: "), lines
