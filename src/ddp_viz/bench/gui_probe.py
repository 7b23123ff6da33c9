"""GUI probes for the benchmark, each run in a fresh process.

    python -m ddp_viz.bench.gui_probe bare     # bare PySide6 + pyqtgraph window; prints PAINTED t
    python -m ddp_viz.bench.gui_probe stream [STEPS WORLD [LESSON]] [--drop N]  # a run; JSON
    python -m ddp_viz.bench.gui_probe timer SECONDS  # a bare window's 16 ms timer; prints JSON

The app's own first paint is probed through ``ddp-viz --probe-first-paint``, so the real start
path is measured.
"""

from __future__ import annotations

import json
import sys
import time


def bare() -> None:
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication, QMainWindow

    from ddp_viz.bench.paint_probe import FirstPaintProbe

    app = QApplication(sys.argv[:1])
    win = QMainWindow()
    win.setCentralWidget(pg.PlotWidget())
    win.resize(1280, 800)
    probe = FirstPaintProbe(win)
    win.show()
    app.exec()
    del probe


def timer(seconds: float) -> None:
    """A bare window ticking a 16 ms timer, the floor for the app's frame intervals: run beside
    a window run, it sees the same machine load. Prints every tick's time (the system's
    monotonic clock) when it is stopped (SIGTERM) or after ``seconds``."""
    import signal

    import pyqtgraph as pg
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow

    app = QApplication(sys.argv[:1])
    win = QMainWindow()
    win.setCentralWidget(pg.PlotWidget())
    win.resize(640, 400)
    win.show()
    ticks: list[float] = []
    tick = QTimer(interval=16)
    tick.timeout.connect(lambda: ticks.append(time.monotonic()))
    tick.start()
    signal.signal(signal.SIGTERM, lambda *_: app.quit())  # runs at the next tick
    QTimer.singleShot(int(seconds * 1000), app.quit)
    print("TICKING", flush=True)
    app.exec()
    print(json.dumps({"ticks": ticks}), flush=True)


def _dropping(win, nth: int) -> None:  # type: ignore[no-untyped-def]
    """Lose the ``nth`` event after the run's start on its way from the engine to the window:
    how a test shows the streaming figure sees a lost event."""
    engine, session = win.engine, win.session
    engine.event_received.disconnect(session.on_transport_event)
    seen = {"after_start": -1}

    def forward(event) -> None:  # type: ignore[no-untyped-def]
        from ddp_viz.model import protocol

        if isinstance(event, protocol.RunStarted):
            seen["after_start"] = 0
        elif seen["after_start"] >= 0:
            seen["after_start"] += 1
            if seen["after_start"] == nth:
                return
        session.on_transport_event(event)

    engine.event_received.connect(forward)


def _figures(record, state: dict, sent: int | None) -> dict:  # type: ignore[no-untyped-def]
    """What the stream probe prints: the run's pace in the window, its frames, and the events
    the window received against those the engine sent (the gap: dropped)."""
    from ddp_viz.bench.stats import percentiles, steady_per_step
    from ddp_viz.model import protocol

    elapsed = state["t_end"] - state["t_start"]
    starts: dict[int, list[float]] = {}
    for e in record.events:
        if isinstance(e, protocol.Timing):
            starts.setdefault(e.rank, []).append(e.spans["forward"][0][0])
    per_step = max(steady_per_step(sorted(v)) for v in starts.values()) if starts else None
    return {
        "status": record.status,
        "events": len(record.events),
        "sent_events": sent,
        "dropped": None if sent is None else sent - len(record.events),
        "bad_lines": record.bad_lines,
        "elapsed_s": elapsed,
        "events_per_s": len(record.events) / elapsed,
        "per_step_s": per_step,
        "window_cpu_s": state["cpu"],  # the window's own CPU time while the run streamed
        "t_start": state["t_start"],
        "t_end": state["t_end"],
        **percentiles(state["intervals"]),
    }


def stream(steps: int = 1000, world_size: int = 4, lesson: str = "", drop: int = 0) -> None:
    """A run in the window, fast: its frame intervals, and the events the window received
    against those the engine says it sent for the run (``engine/sent_log.py``); ``drop``:
    lose that event (1: the first after the run's start) on the way, as a self-check."""
    import os
    import tempfile

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.main_window import MainWindow
    from ddp_viz._qt.theme import apply_theme
    from ddp_viz.engine.sent_log import SENT_LOG_ENV, read_sent
    from ddp_viz.model import protocol
    from ddp_viz.model.course import load_lesson
    from ddp_viz.model.scenario import default_scenario
    from ddp_viz.model.theme import load_theme

    # the engine inherits this process's environment when the window starts it
    handle, counts = tempfile.mkstemp(prefix="ddp-viz-sent-", suffix=".jsonl")
    os.close(handle)
    os.environ[SENT_LOG_ENV] = counts
    app = QApplication(sys.argv[:1])
    apply_theme(app, load_theme("light"))
    base = load_lesson(lesson).scenario() if lesson else default_scenario()
    scenario = base.with_changes(world_size=world_size, steps=steps)
    win = MainWindow(scenario)
    if lesson:
        win.set_lesson(lesson)
        win.form.set_scenario(scenario)
    if drop > 0:
        _dropping(win, drop)
    win.resize(1280, 800)
    win.show()
    win.start()
    state: dict = {"intervals": [], "last": None, "t_start": None}
    frames = QTimer()
    frames.setInterval(16)

    def on_frame() -> None:
        now = time.monotonic()
        if state["last"] is not None:
            state["intervals"].append(now - state["last"])
        state["last"] = now

    frames.timeout.connect(on_frame)

    def maybe_start() -> None:
        workers = win.session.workers.values()
        warm = sum(w.state == protocol.WorkerStatus.READY for w in workers) >= world_size
        # as a person would: Run once the window is up, its start-up work (Markdown, the code
        # highlighter, pyqtgraph) done; the start-up has a figure of its own
        if win.session.engine_ready and warm and win.after_paint.finished:
            poll.stop()
            state["cpu_start"] = time.process_time()  # this process, every thread
            state["t_start"] = time.monotonic()
            frames.start()
            win.start_run()

    def on_ended(record) -> None:
        frames.stop()
        state["t_end"] = time.monotonic()
        state["cpu"] = time.process_time() - state["cpu_start"]
        # the engine wrote its count before the run's last event: it is in the file by now
        sent = read_sent(counts, record.run)
        os.unlink(counts)
        print(json.dumps(_figures(record, state, sent)), flush=True)
        win.close()
        app.quit()

    win.run_ended.connect(on_ended)
    poll = QTimer()
    poll.setInterval(20)
    poll.timeout.connect(maybe_start)
    poll.start()
    app.exec()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "bare"
    if mode == "bare":
        bare()
    elif mode == "timer":
        timer(float(sys.argv[2]))
    else:
        args = sys.argv[2:]
        drop = 0
        if "--drop" in args:
            at = args.index("--drop")
            drop = int(args[at + 1])
            del args[at : at + 2]
        stream(*(int(a) for a in args[:2]), *args[2:3], drop=drop)
