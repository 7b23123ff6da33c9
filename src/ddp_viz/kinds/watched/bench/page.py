"""The watched page's frame intervals while a real watched run streams into it, against a bare
Qt window's 16 ms timer over the same seconds (the same machine load): the page stays
responsive when its frame p99 is within twice the bare timer's.

    python -m ddp_viz.kinds.watched.bench.page [--projector] [--size WxH] -- COMMAND…

prints one JSON line: the page's frame p50 and p99, the bare timer's p99, their ratio, and the
run's steps and ranks. The page runs offscreen (``QT_QPA_PLATFORM`` as set, ``offscreen``
otherwise), in a process of its own (:func:`page`, through ``gui_probe``-style ``--page``)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any

from ddp_viz.bench.stats import percentiles, probe_figures


def page(command: list[str], projector: bool, size: tuple[int, int]) -> None:
    """In this process: the window, the watched run streaming in, a 16 ms timer that notes
    every tick from the first event to the command's end; prints the JSON line."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.main_window import MainWindow
    from ddp_viz._qt.startup import freeze_start_up
    from ddp_viz._qt.theme import apply_theme
    from ddp_viz.kinds.watched.qt import start_live
    from ddp_viz.model.scenario import default_scenario

    app = QApplication(sys.argv[:1])
    window = MainWindow(default_scenario())
    if projector:
        window.presentation.set_projector(True)
    apply_theme(app, window.theme)
    window.resize(*size)
    window.show()
    window.start(engine=False)  # as the app does for a watched run
    window.after_paint.add(freeze_start_up)  # as the app does
    args = SimpleNamespace(watch_cmd=command, record=None, budget=None, listen="127.0.0.1:0")
    result: dict[str, Any] = {"code": 0}
    live = start_live(window, args, result)
    ticks: list[float] = []
    frames = QTimer(interval=16)
    frames.timeout.connect(lambda: ticks.append(time.monotonic()))
    frames.start()
    deliver = live.deliver
    first: list[float] = []

    def noted(event: Any) -> None:  # the first event starts the measured span
        if not first:
            first.append(time.monotonic())
        deliver(event)

    live.deliver = noted

    def ended(code: int) -> None:
        end = time.monotonic()
        rec = window.session.record
        inside = [t for t in ticks if first and t >= first[0]]
        intervals = [b - a for a, b in itertools.pairwise(inside)]
        out = {
            "code": code,
            "t_start": first[0] if first else end,
            "t_end": end,
            "steps": len(rec.steps),
            "world_size": rec.world_size,
            "tensors": len(rec.params),
            **percentiles(intervals),
        }
        print(json.dumps(out), flush=True)
        window.close()
        app.quit()

    live.ended.connect(ended)
    app.exec()
    live.stop()
    window.session.shutdown()


def measure(command: list[str], projector: bool = False, size: str = "1280x800") -> dict:
    """The page in one process, the bare timer in another, side by side."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    probe = [sys.executable, "-m", "ddp_viz.bench.gui_probe"]
    floor = subprocess.Popen(
        [*probe, "timer", "900"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=env,
    )  # fmt: skip
    try:
        assert floor.stdout is not None
        floor.stdout.readline()  # TICKING: the bare window is up
        me = [sys.executable, "-m", "ddp_viz.kinds.watched.bench.page", "--page", "--size", size]
        me += ["--projector"] if projector else []
        run = subprocess.run([*me, "--", *command], capture_output=True, text=True, env=env,
                             timeout=900)  # fmt: skip
    finally:
        floor.terminate()
    data = probe_figures(floor, run, "watch page")
    bare = data["bare_timer_p99_ms"]
    data["p99_ratio"] = data["frame_p99_ms"] / bare if bare and data["frame_p99_ms"] else None
    return data


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m ddp_viz.kinds.watched.bench.page")
    parser.add_argument("--page", action="store_true", help="(internal) be the page's process")
    parser.add_argument("--projector", action="store_true")
    parser.add_argument("--size", default="1280x800")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.page:
        w, h = (int(v) for v in args.size.split("x"))
        page(command, args.projector, (w, h))
        return 0
    print(json.dumps(measure(command, args.projector, args.size)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
