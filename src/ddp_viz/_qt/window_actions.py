"""The window's toolbar, menus and their keys (every action works from the keyboard)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QSlider, QToolBar

from ddp_viz.model import registry

if TYPE_CHECKING:
    from ddp_viz._qt.main_window import MainWindow  # which imports this module

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
EXPORTS = (
    ("Window as PNG…", "export_window_png"),
    ("Stage as PNG…", "export_stage_png"),
    ("Run as animated GIF…", "export_gif"),
    ("Events as JSON lines…", "export_events"),
    ("Chrome trace (Perfetto)…", "export_trace"),
)


def action(w: MainWindow, text: str, keys: list[str], slot: Callable, tip: str) -> QAction:
    act = QAction(text, w)
    act.setShortcuts([QKeySequence(k) for k in keys])
    act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    act.setToolTip(f"{tip} ({', '.join(keys)})" if keys else tip)
    act.triggered.connect(slot)
    w.addAction(act)
    return act


def build_toolbar(w: MainWindow) -> QToolBar:
    tb = QToolBar("Run")
    tb.setMovable(False)
    tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    w.addToolBar(tb)
    w.run_action = action(w, "▶ Run", ["R", "Ctrl+R"], w.start_run, "Start real DDP ranks")
    w.cancel_action = action(w, "■ Cancel", ["Escape"], w._on_escape, "Stop every rank of this run")
    w.first_action = action(w, "|◀", ["Home"], w._on_first, "First phase")
    w.back_action = action(w, "◀", ["Left", "PgUp"], w._on_back, "Previous phase")
    w.play_action = action(w, "Play", ["Space"], w.player.toggle, "Play / pause")
    w.fwd_action = action(w, "▶", ["Right", "PgDown"], w._on_forward, "Next phase")
    w.fullscreen_action = action(w, "Full screen", ["F11"], w.toggle_fullscreen, "Full screen")
    w.help_action = action(w, "Keys", ["F1"], w.show_shortcuts, "Keyboard shortcuts")
    w.turn_action = action(w, "Next tensors", ["T"], w.stage.turn_page, "The next tensors")
    w.blank_action = action(w, "Blank screen", ["B", "."], w.blank.toggle, "Blank the screen")
    for a in (w.run_action, w.cancel_action):
        tb.addAction(a)
    tb.addSeparator()
    for a in (w.first_action, w.back_action, w.play_action, w.fwd_action):
        tb.addAction(a)
    tb.addSeparator()
    w.speed_label = QLabel(" Speed ")
    w.speed_label_action = tb.addWidget(w.speed_label)
    w.speed = QComboBox()
    for s in SPEEDS:
        w.speed.addItem(f"{s:g}×", s)
    w.speed.setCurrentIndex(SPEEDS.index(1.0))
    w.speed.currentIndexChanged.connect(lambda i: w.player.set_speed(float(w.speed.itemData(i))))
    w.speed_action = tb.addWidget(w.speed)
    w.follow = QCheckBox("Follow latest step")
    w.follow.setToolTip("Fast mode: show the newest step as a long run streams in")
    w.follow.toggled.connect(w._on_follow_toggled)
    tb.addWidget(w.follow)
    tb.addSeparator()
    w.step_slider = QSlider(Qt.Orientation.Horizontal)
    w.step_slider.setMinimumWidth(120)
    w.step_slider.setRange(0, 0)
    w.step_slider.valueChanged.connect(w._on_step_slider_changed)
    tb.addWidget(w.step_slider)
    w.position_label = QLabel("")
    tb.addWidget(w.position_label)
    tb.addSeparator()
    tb.addAction(w.fullscreen_action)
    tb.addAction(w.help_action)
    return tb


def build_menus(w: MainWindow) -> None:
    fa, pr = w.file_actions, w.presentation
    bar = w.menuBar()
    file_menu = bar.addMenu("&File")
    for text, keys, name in (
        ("Load scenario…", ["Ctrl+O"], "load_scenario"),
        ("Save scenario…", ["Ctrl+S"], "save_scenario"),
        ("Open run…", ["Ctrl+Shift+O"], "open_run"),
    ):
        file_menu.addAction(
            action(w, text, keys, lambda _=False, n=name: fa.dialog(n), text.rstrip("…"))
        )
    file_menu.addSeparator()
    exports = file_menu.addMenu("Export")
    w.export_actions = {}
    for text, name in EXPORTS:
        act = action(w, text, [], lambda _=False, n=name: fa.dialog(n), text[:-1])
        w.export_actions[name] = act
        exports.addAction(act)
    exports.aboutToShow.connect(w.update_exports)
    file_menu.addSeparator()
    file_menu.addAction(action(w, "Quit", ["Ctrl+Q"], w.close, "Quit"))

    lessons = bar.addMenu("&Lesson")
    w.next_lesson_action = action(w, "Next lesson", ["Alt+Right"], w.next_lesson, "Next lesson")
    w.prev_lesson_action = action(
        w, "Previous lesson", ["Alt+Left"], w.previous_lesson, "Previous lesson"
    )
    lessons.addAction(w.next_lesson_action)
    lessons.addAction(w.prev_lesson_action)

    view = bar.addMenu("&View")
    w.projector_action = action(
        w, "Projector mode", ["Ctrl+P"], lambda: None, "Large type, high contrast, panels folded"
    )
    w.projector_action.setCheckable(True)
    w.projector_action.setChecked(pr.projector)
    w.projector_action.toggled.connect(pr.set_projector)
    view.addAction(w.projector_action)
    themes = QActionGroup(w)
    w.theme_actions = {}
    for name in ("light", "dark"):
        act = action(
            w, f"{name.title()} theme", [], lambda _=False, n=name: pr.set_normal_theme(n), name
        )
        act.setCheckable(True)
        act.setChecked(pr.normal == name)
        themes.addAction(act)
        view.addAction(act)
        w.theme_actions[name] = act
    w.side_action = action(
        w,
        "Lesson and settings panel",
        ["Ctrl+L"],
        lambda: None,
        "Show or hide the left column (more room for the stage)",
    )
    w.side_action.setCheckable(True)
    w.side_action.setChecked(True)
    w.side_action.toggled.connect(w._on_side_panel_toggled)
    view.addAction(w.side_action)
    for part in registry.load_parts("qt").values():  # a kind's page adds its own views
        if hasattr(part, "view_actions"):
            for act in part.view_actions(w):
                view.addAction(act)
    view.addSeparator()
    w.zoom_in_action = action(w, "Zoom in", ["Ctrl+=", "Ctrl++"], pr.zoom_in, "Zoom in")
    w.zoom_out_action = action(w, "Zoom out", ["Ctrl+-"], pr.zoom_out, "Zoom out")
    view.addAction(w.zoom_in_action)
    view.addAction(w.zoom_out_action)
    view.addAction(action(w, "Actual size", ["Ctrl+0"], pr.zoom_reset, "Zoom 100%"))
    view.addSeparator()
    view.addAction(w.fullscreen_action)
    bar.addMenu("&Help").addAction(w.help_action)
