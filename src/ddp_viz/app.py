"""Start the window: display check, theme, command-line options (--run, --screenshot …)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ddp_viz._qt.presentation import Presentation

NO_DISPLAY = (
    "ddp-viz: no display found (DISPLAY/WAYLAND_DISPLAY unset). Use it headless instead: "
    "`ddp-viz run` prints a real run as a table (`--json` for events), or "
    "`QT_QPA_PLATFORM=offscreen ddp-viz --run --screenshot out.png --quit` renders the window."
)


def has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def presentation_from_args(presentation: Presentation, args: argparse.Namespace) -> None:
    """Projector mode as the command line asks: ``--projector`` turns it on; a window of the
    user's own run (``ddp-viz watch``) does not take it over from a lecture's settings."""
    if getattr(args, "live", None):
        presentation.own_runs()
    if args.projector:
        presentation.set_projector(True)


def main(args: argparse.Namespace) -> int:
    from ddp_viz.model.lesson import LessonError
    from ddp_viz.model.scenario import ScenarioError
    from ddp_viz.options import EXIT_USAGE, load_scenario, parse_size, window_scenario

    try:
        load_scenario(args)  # checks every flag before anything starts
        size = parse_size(args.size) if args.size else (1280, 800)
    except (ScenarioError, LessonError, ValueError) as exc:
        print(f"ddp-viz: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not has_display():
        print(NO_DISPLAY, file=sys.stderr)
        return EXIT_USAGE
    from ddp_viz.display import xcb_problem

    problem = xcb_problem()
    if problem:
        print(problem, file=sys.stderr)
        return EXIT_USAGE

    from PySide6.QtCore import QSettings, QTimer, qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.main_window import MainWindow
    from ddp_viz._qt.startup import freeze_start_up
    from ddp_viz._qt.theme import apply_theme

    previous = None

    def quieter(mode, context, message):  # type: ignore[no-untyped-def]
        # The offscreen platform says this on every window; it is noise, not a problem.
        if "propagateSizeHints" in message:
            return
        if previous is not None:
            previous(mode, context, message)
        else:
            print(message, file=sys.stderr)

    previous = qInstallMessageHandler(quieter)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("ddp-viz")
    app.setOrganizationName("ddp-viz")
    scripted = bool(args.screenshot and args.quit)
    # Remembered between sessions (projector mode, theme, zoom); scripted runs leave it alone.
    settings = None if scripted else QSettings()
    remembered = str(settings.value("course/current", "")) if settings is not None else ""
    scenario = window_scenario(args, remembered)
    window = MainWindow(
        scenario,
        phase_ms=120 if scripted else 1100,
        settings=settings,
        lesson_id=args.lesson,
    )
    presentation_from_args(window.presentation, args)
    apply_theme(app, window.theme)
    window.resize(*size)
    if args.probe_first_paint:  # `ddp-viz bench`: time to the first painted main window
        from ddp_viz.bench.paint_probe import FirstPaintProbe

        window._paint_probe = FirstPaintProbe(window)
    window.show()
    window.start(engine=not getattr(args, "live", None))  # a watched run needs no engine
    window.after_paint.add(freeze_start_up)
    result = {"code": 0}

    def save_and_maybe_quit(record: object = None) -> None:
        if args.screenshot:
            # a few rounds, not one: pyqtgraph widens an axis for its tick values once they are
            # laid out, a layout request or two after the run was shown, and a screenshot
            # taken before had the projector's "ms" over the arrival plot's "100"
            for _ in range(4):
                app.processEvents()
            if not window.grab().save(args.screenshot):
                print(f"ddp-viz: could not write {args.screenshot}", file=sys.stderr)
                result["code"] = 1
            else:
                print(f"ddp-viz: saved {args.screenshot}", file=sys.stderr)
        from ddp_viz.model.timeline import RunStatus

        status = getattr(record, "status", RunStatus.FINISHED)
        if status is not RunStatus.FINISHED:
            print(f"ddp-viz: run {status}: {getattr(record, 'reason', '')}", file=sys.stderr)
            result["code"] = 1
        if args.quit:
            window.close()
            app.quit()

    # Ctrl-C in the terminal or SIGTERM: close the window, which stops the engine and its ranks.
    # Qt's loop never returns to Python on its own, so a light timer lets signals through.
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: (window.close(), app.quit()))
    heartbeat = QTimer()
    heartbeat.start(200)
    heartbeat.timeout.connect(lambda: None)

    live = None
    if getattr(args, "live", None):  # a kind's command streams its run in (ddp-viz watch)
        live = start_live(window, args, result)
    elif getattr(args, "open", None):
        # from inside the event loop: a recording can be shown to its end at once, and a
        # quit asked for before the loop runs would be lost (the process would hang)
        QTimer.singleShot(0, lambda: open_recording_arg(window, args, result, save_and_maybe_quit))
    elif args.run:
        window.run_shown.connect(save_and_maybe_quit)
        window.start_run()
    elif args.screenshot or args.quit:
        QTimer.singleShot(300, save_and_maybe_quit)
    app.exec()
    if live is not None:
        live.stop()
        result["code"] = live.code if live.code is not None else result["code"]
    # Tear the window down while Qt is still alive: left to interpreter shutdown, PySide6
    # and pyqtgraph objects can be collected in an order that aborts the process.
    window.session.shutdown()
    window.deleteLater()
    app.processEvents()
    import gc

    gc.collect()
    return result["code"]


def start_live(window, args, result):  # type: ignore[no-untyped-def]
    """A kind's run streaming into the window from outside it (``args.live`` names the kind,
    whose Qt part starts it): what it returns is stopped when the window closes, and its
    ``code`` is the process's exit code."""
    from ddp_viz.model import registry

    return registry.load_parts("qt")[args.live].start_live(window, args, result)


def open_recording_arg(window, args, result, done) -> None:  # type: ignore[no-untyped-def]
    """``ddp-viz FILE.jsonl`` / ``--open FILE``: show the recording; with ``--screenshot``
    and ``--quit``, save and leave once it has been shown to its end."""
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.recording import RecordingError

    window.run_shown.connect(done)
    try:
        window.file_actions.open_run(args.open)
    except RecordingError as exc:
        print(f"ddp-viz: {exc}", file=sys.stderr)
        result["code"] = 2
        window.status.setText(str(exc))
        if args.quit:
            window.close()
            QApplication.quit()
