"""GUI probes for the benchmark, each run in a fresh process.

    python -m ddp_viz.bench.gui_probe bare     # bare PySide6 + pyqtgraph window; prints PAINTED t
    python -m ddp_viz.bench.gui_probe stream   # 1,000-step 4-rank run in fast mode; prints JSON

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


def stream(steps: int = 1000, world_size: int = 4) -> None:
    import numpy as np
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.main_window import MainWindow
    from ddp_viz._qt.theme import apply_theme
    from ddp_viz.model.scenario import default_scenario
    from ddp_viz.model.theme import load_theme

    app = QApplication(sys.argv[:1])
    apply_theme(app, load_theme("light"))
    win = MainWindow(default_scenario().with_changes(world_size=world_size, steps=steps))
    win.resize(1280, 800)
    win.show()
    win.start()
    state: dict = {"intervals": [], "last": None, "t_start": None}
    frames = QTimer()
    frames.setInterval(16)

    def on_frame() -> None:
        now = time.perf_counter()
        if state["last"] is not None:
            state["intervals"].append(now - state["last"])
        state["last"] = now

    frames.timeout.connect(on_frame)

    def maybe_start() -> None:
        workers = win.session.workers.values()
        if win.session.engine_ready and sum(w.state == "ready" for w in workers) >= world_size:
            poll.stop()
            state["t_start"] = time.perf_counter()
            frames.start()
            win.start_run()

    def on_ended(record) -> None:
        frames.stop()
        elapsed = time.perf_counter() - state["t_start"]
        # run_started, rank_started and initial_params per rank, a reference per step,
        # four events per rank and step, run_finished
        expected = 1 + 2 * world_size + steps + steps * world_size * 4 + 1
        iv = np.array(state["intervals"]) * 1000
        print(
            json.dumps(
                {
                    "status": record.status,
                    "events": len(record.events),
                    "expected_events": expected,
                    "bad_lines": record.bad_lines,
                    "elapsed_s": elapsed,
                    "events_per_s": len(record.events) / elapsed,
                    "frame_p50_ms": float(np.percentile(iv, 50)) if len(iv) else None,
                    "frame_p99_ms": float(np.percentile(iv, 99)) if len(iv) else None,
                    "frames": len(iv),
                }
            ),
            flush=True,
        )
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
    bare() if mode == "bare" else stream()
