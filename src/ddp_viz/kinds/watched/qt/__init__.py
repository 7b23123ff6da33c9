"""The watched run's side of the window (Qt, no torch): streaming a run in (``live``), its
Run tab's tables (``tables``) and its plots' curves (``plot``).

The window finds :func:`start_live` here when ``ddp-viz watch`` opens it (``args.live``).
"""

from __future__ import annotations

from typing import Any

from ddp_viz.kinds.watched.qt import plot

CURVES = plot  # what the plots draw for a watched run (the window's plots.kind_curves)

# the help sheet's lines for the keys this part adds (after the window's own)
SHORTCUTS = [
    ("Ctrl+T", "a watched run's tables: every bucket and tensor"),
    ("Tab, Enter", "a watched run's diagnosis on the stage: its step and its rank's stack"),
]


def view_actions(window: Any) -> list[Any]:  # window: MainWindow; -> its QActions
    """View ▸ Run tables (Ctrl+T): the page's tables in the left column, enabled on the
    watched page only."""
    from ddp_viz._qt.window_actions import action
    from ddp_viz.kinds.watched.qt.tables import show_run_tables

    window.run_tables_action = action(
        window,
        "Run tables: every bucket and tensor",
        ["Ctrl+T"],
        lambda: show_run_tables(window),
        "A watched run's tables, in the left column",
    )
    window.run_tables_action.setEnabled(False)  # a watched run's page only
    return [window.run_tables_action]


def show_page(window: Any, shown: bool) -> None:
    """The page's own views on (``shown``: the watched page was put on the window) or off
    (a lesson was): its Run tab, every bucket and tensor, sortable."""
    from ddp_viz.kinds.watched.qt import diagnosis_tab
    from ddp_viz.kinds.watched.qt.tables import show_run_tab

    show_run_tab(window, shown)
    diagnosis_tab.forget(window)  # the last run's diagnosis
    # its plots' titles and words before the run (plots.expect)
    window.plots_panel.expect(CURVES if shown else None)


def follow_link(window: Any, key: str) -> None:
    """A link on the watched page (a diagnosis): its step and its rank's stack."""
    from ddp_viz.kinds.watched.qt.diagnosis_tab import follow_link as follow

    follow(window, key)


def start_live(window, args, result):  # type: ignore[no-untyped-def]
    """Run the watched command (``args.watch_cmd``) with its events streaming into the
    window's session; ``result["code"]`` becomes the command's exit code."""
    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.kinds.watched.qt.live import LiveWatch
    from ddp_viz.kinds.watched.scene import WAITING
    from ddp_viz.kinds.watched.watch.listener import RUN
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    live = LiveWatch(args.watch_cmd, args.record, args.budget, args.listen)
    show_lesson(window, load_lesson_folder(asset("watched")))
    window.session.expect_run(RUN)
    live.deliver = window.session.on_transport_event
    live.ended.connect(lambda code: result.update(code=code))
    live.ended.connect(lambda code: window.status.setText(ended_text(window, code)))
    # until its ranks join and report: not "Press Run", the page runs nothing of its own
    window.stage.set_message(WAITING)
    live.start()
    return live


def ended_text(window, code: int) -> str:  # type: ignore[no-untyped-def]
    """The status line once a watched command exited: the run's own line, if it ran, then
    the command's status."""
    from ddp_viz.model.session import status_text

    rec = window.session.record
    ran = f"{status_text(rec)} " if rec.run is not None and rec.done else ""
    return f"{ran}The watched command exited with {code}."
