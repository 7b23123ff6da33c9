"""Lecturer mode: projector presentation, keyboard control, exports (recorded events, no torch)."""

from __future__ import annotations

import json

import pytest
from PIL import Image
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QLabel

from ddp_viz.model import protocol
from ddp_viz.model.recording_format import header
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.timeline import Cursor
from tests.conftest import load_recording
from tests.core.test_exports import check_trace
from tests.frames import assert_inside_and_apart
from tests.qt_helpers import feed

pytestmark = pytest.mark.usefixtures("qapp")


def show_run(qtbot, window, name: str = "default-run.jsonl") -> None:
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording(name))


def assert_panels_visible(window) -> None:
    for panel in (window.stage, window.code_view, window.plots_panel, window.toolbar):
        assert panel.isVisible(), panel
        assert (panel.width() > 200 and panel.height() > 100) or panel is window.toolbar
    for action in (
        window.run_action,
        window.cancel_action,
        window.play_action,
        window.fwd_action,
        window.back_action,
    ):
        button = window.toolbar_button(action)
        assert button.isVisible(), action.text()  # not pushed into the overflow menu
        assert button.geometry().right() <= window.toolbar.width()


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_projector_mode_is_big_high_contrast_and_folds_secondary_panels(
    qtbot, make_window, settings, size
):
    window = make_window(size, settings=settings)
    window.presentation.set_projector(True)
    show_run(qtbot, window)
    QApplication.processEvents()
    assert window.theme.name == "projector"
    assert not window.splitters["left"].isVisible()  # lesson, quiz, settings folded away
    assert not window.process_box.isVisible()
    assert_panels_visible(window)
    assert QApplication.font().pixelSize() >= 24
    assert window.code_view.font().pixelSize() >= 24
    assert window.plots.text_px >= 24
    assert window.theme.line_px >= 3
    assert all(c.opts["pen"].width() >= 3 for c in window.plots._curves.values())
    # every text the stage painted: 24 px on a 1920×1080 projector; a 1280×720 one fits the
    # lanes into a narrower stage with smaller type rather than cut numbers off
    # 24 px at 1280×720 too: the tensors take turns rather than go under the floor (16 px before)
    assert_stage_type(window, 24)
    assert_inside_and_apart(window.stage.frame())


def assert_stage_type(window, floor: float) -> None:
    """The stage painted every text of its frame at the frame's size, none below ``floor``."""
    frame = window.stage.frame()
    window.stage.repaint()
    painted = window.stage.painted_px
    assert painted == [max(1, round(t.font.px)) for t in frame.texts]
    # a whole frame (one tensor at a time on a projector at 1280×720: 19 texts)
    assert len(painted) > 15 and min(painted) >= floor, sorted(painted)[:5]


def test_projector_mode_is_remembered(qtbot, make_window, tmp_path):
    path = str(tmp_path / "remember.ini")
    first = make_window(settings=QSettings(path, QSettings.Format.IniFormat))
    qtbot.keyClick(first, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    assert first.presentation.projector
    first.close()
    second = make_window(settings=QSettings(path, QSettings.Format.IniFormat))
    assert second.presentation.projector and second.theme.name == "projector"
    assert not second.splitters["left"].isVisible()
    qtbot.keyClick(second, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    assert second.theme.name == "light" and second.splitters["left"].isVisible()


def test_the_lesson_column_folds_away_for_a_bigger_stage(qtbot, window):
    show_run(qtbot, window)
    before = window.stage.width()
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert not window.splitters["left"].isVisible()
    qtbot.waitUntil(lambda: window.stage.width() > before + 200)
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert window.splitters["left"].isVisible()


def test_light_and_dark_themes(qtbot, make_window, settings):
    window = make_window(settings=settings)
    window.theme_actions["dark"].trigger()
    assert window.theme.name == "dark" and window.theme.dark
    assert QApplication.palette().window().color().name() == window.theme.window
    window.theme_actions["light"].trigger()
    assert window.theme.name == "light"


def test_zoom_keys_scale_the_type(qtbot, make_window, settings):
    window = make_window(settings=settings)
    base = window.theme.font_px
    qtbot.keyClick(window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert window.theme.font_px > base
    qtbot.keyClick(window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert window.theme.font_px < base
    qtbot.keyClick(window, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert window.theme.font_px == base


def test_every_shortcut(qtbot, window):
    show_run(qtbot, window, "four-ranks-3-steps.jsonl")
    qtbot.waitUntil(lambda: not window.player.playing)
    keys = [
        (Qt.Key.Key_Left, Cursor(2, 2)),
        (Qt.Key.Key_PageUp, Cursor(2, 1)),
        (Qt.Key.Key_Right, Cursor(2, 2)),
        (Qt.Key.Key_PageDown, Cursor(2, 3)),
        (Qt.Key.Key_Home, Cursor(0, 0)),
    ]
    for key, expected in keys:
        qtbot.keyClick(window, key)
        assert window.player.cursor == expected, key
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert window.player.playing
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert not window.player.playing
    qtbot.keyClick(window, Qt.Key.Key_F11)
    assert window.windowState() & Qt.WindowState.WindowFullScreen
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.windowState() & Qt.WindowState.WindowFullScreen
    qtbot.keyClick(window, Qt.Key.Key_F1)
    sheet = window.shortcut_sheet
    assert sheet.isVisible()
    text = sheet.findChild(QLabel).text()
    assert "Space" in text and "PageDown" in text
    # it fits the screen, its Close button too (in projector type it ran past 800 px)
    room = window.screen().availableGeometry()
    assert sheet.height() <= room.height() and sheet.width() <= room.width()
    sheet.close()
    qtbot.keyClick(window, Qt.Key.Key_R)  # no engine in this test: the run waits for it
    assert window.session._run_when_ready is not None
    assert "Waiting for the engine" in window.status.text()


@pytest.mark.slow
def test_exports_produce_valid_files(qtbot, window, tmp_path):
    show_run(qtbot, window, "four-ranks-3-steps.jsonl")
    fa = window.file_actions
    for path, export in (
        (tmp_path / "window.png", fa.export_window_png),
        (tmp_path / "stage.png", fa.export_stage_png),
    ):
        export(path)
        with Image.open(path) as img:
            img.verify()
    with Image.open(tmp_path / "window.png") as img:
        assert img.size == (window.width(), window.height())
    fa.export_gif(tmp_path / "phases.gif")
    with Image.open(tmp_path / "phases.gif") as gif:
        assert gif.n_frames == 3 * 4  # one frame per phase of 3 steps
    assert_gif_phases_are_finished(window, tmp_path / "phases.gif")
    fa.export_gif(tmp_path / "smooth.gif", fps=5)
    with Image.open(tmp_path / "smooth.gif") as gif:
        assert gif.n_frames > 3 * 4
    fa.export_events(tmp_path / "run.jsonl")
    lines = (tmp_path / "run.jsonl").read_text().splitlines()
    decoded = [protocol.decode(x) for x in lines]
    assert decoded[0] == header(window.lesson.id)  # the recording names its lesson first
    assert decoded[1:] == window.session.record.events
    fa.export_trace(tmp_path / "trace.json")
    check_trace(json.loads((tmp_path / "trace.json").read_text()), window.session.record)


def test_exports_before_any_run_say_so(window, tmp_path):
    with pytest.raises(ValueError, match="run something first"):
        window.file_actions.export_trace(tmp_path / "t.json")
    with pytest.raises(ValueError, match="run something first"):
        window.file_actions.export_gif(tmp_path / "t.gif")


def test_scenario_save_and_load(window, tmp_path):
    window.form.world_size.setValue(4)
    window.form.lr.setText("0.02")
    path = window.file_actions.save_scenario(tmp_path / "mine.toml")
    assert Scenario.load(path).world_size == 4 and Scenario.load(path).lr == 0.02
    window.form.reset.click()
    window.file_actions.load_scenario(path)
    assert window.form.scenario() == Scenario.load(path)
    bad = tmp_path / "bad.toml"
    bad.write_text("lr = -1\n")
    with pytest.raises(ScenarioError, match="lr"):
        window.file_actions.load_scenario(bad)
    assert window.form.scenario().lr == 0.02  # nothing lost


def assert_gif_phases_are_finished(window, path) -> None:
    """Each frame of a one-frame-per-phase GIF is that phase finished, as the stage draws it."""
    from ddp_viz._qt import export
    from ddp_viz._qt.stage import StageWidget
    from ddp_viz.model.timeline import walk

    stage = StageWidget(window.theme, window.lesson)
    stage.resize(1280, 720)
    stage.set_record(window.session.record)
    frames = export.stage_frames(window.session.record, window.theme, window.lesson)
    cursors = list(walk(3))
    assert len(frames) == len(cursors)
    for frame, cursor in zip(frames, cursors, strict=True):  # rendering is deterministic
        stage.set_position(cursor, 1.0)
        assert frame.tobytes() == export._to_pil(stage.grab().toImage()).tobytes(), cursor
    with Image.open(path) as gif:
        assert gif.n_frames == len(cursors)
    stage.deleteLater()


def layout(window) -> dict[str, object]:
    """What projector mode changes: each column's share of the width, the panels shown, the
    type's size."""
    sizes = window.splitters["main"].sizes()
    return {
        "shares": [s / max(1, sum(sizes)) for s in sizes],
        "side panel": window.splitters["left"].isVisible(),
        "app px": QApplication.font().pixelSize(),
        "field px": window.form.lr.font().pixelSize(),
    }


def same_layout(a: dict[str, object], b: dict[str, object]) -> bool:
    # The shares within half a percent: the window may come back a few px wider than it was
    # (at 1280 px the projector toolbar can need a little more for a moment), not narrower.
    shares = zip(a["shares"], b["shares"], strict=True)  # type: ignore[call-overload]
    return all(abs(x - y) < 0.005 for x, y in shares) and all(
        a[k] == b[k] for k in ("side panel", "app px", "field px")
    )


def test_leaving_projector_mode_restores_the_layout(qtbot, make_window, settings):
    window = make_window((1280, 800), settings=settings)
    QApplication.processEvents()
    before = layout(window)
    assert before["side panel"] and before["shares"][0] > 0.2 and before["field px"] < 24

    def projector_layout() -> bool:
        on = layout(window)
        return on["shares"][0] == 0 and not on["side panel"] and on["field px"] >= 24

    window.presentation.set_projector(True)
    # Projector mode did change the layout: otherwise "restored" below would prove nothing.
    qtbot.waitUntil(projector_layout, timeout=10_000)
    assert not same_layout(layout(window), before) and QApplication.font().pixelSize() >= 24
    window.presentation.set_projector(False)
    qtbot.waitUntil(lambda: same_layout(layout(window), before), timeout=10_000)


def test_projector_mode_does_not_follow_into_ddp_viz_watch(qtbot, make_window, tmp_path):
    """Issue 47, 9: projector mode, left on by a lecture, opened `ddp-viz watch` in it (its
    plots clipped). A watch window opens in the normal theme; switching there leaves the
    lecture's setting alone; the next lesson window is a projector's again."""
    import argparse

    from ddp_viz.app import presentation_from_args

    path = str(tmp_path / "remember.ini")
    lecture = make_window(settings=QSettings(path, QSettings.Format.IniFormat))
    lecture.presentation.set_projector(True)
    lecture.close()
    watch = make_window(settings=QSettings(path, QSettings.Format.IniFormat))
    presentation_from_args(
        watch.presentation, argparse.Namespace(live=["torchrun", "train.py"], projector=False)
    )
    assert not watch.presentation.projector and watch.theme.name == "light"
    assert watch.splitters["left"].isVisible()
    watch.presentation.set_projector(True)  # on and off again in the watch window
    watch.presentation.set_projector(False)
    watch.close()
    again = make_window(settings=QSettings(path, QSettings.Format.IniFormat))
    assert again.presentation.projector and again.theme.name == "projector"
    # asked for on the command line, a watch window is a projector's
    asked = make_window(settings=QSettings(path, QSettings.Format.IniFormat))
    presentation_from_args(
        asked.presentation, argparse.Namespace(live=["torchrun", "train.py"], projector=True)
    )
    assert asked.theme.name == "projector"


def test_the_lesson_column_on_a_projector_keeps_the_stage_readable(qtbot, make_window, settings):
    """Issue 47, 8: Ctrl+L in projector mode at 1280×800 shrank the stage's labels to ~7-9 px
    (the column and the plots both took their share) and made the layout wider than the
    window. With the column shown on a projector the plots fold away; Ctrl+L again brings
    them back."""
    from tests.conftest import load_recording
    from tests.qt_helpers import feed

    window = make_window((1280, 800), settings=settings)
    window.presentation.set_projector(True)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("default-run.jsonl"))
    QApplication.processEvents()
    before = window.stage.frame().smallest_px()
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.splitters["left"].isVisible())
    QApplication.processEvents()
    assert not window.plots_panel.isVisible()
    # (7 px before; the column's least width leaves the stage a little narrower than without it)
    assert window.stage.frame().smallest_px() >= before * 0.85, (before, window.stage.width())
    assert window.minimumSizeHint().width() <= 1280
    main = window.splitters["main"]
    assert sum(main.sizes()) <= main.width() + 1
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.plots_panel.isVisible())
    assert not window.splitters["left"].isVisible()


def test_a_clickers_blank_key_blanks_the_window_and_brings_it_back(qtbot, window):
    """Issue 47, 11: B (a clicker's blank key) did nothing. B or "." covers the window in
    black; again brings it back where it was; in a field B is a letter."""
    show_run(qtbot, window)
    cursor = window.player.cursor
    window.stage.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_B)
    assert window.blank.isVisible() and window.blank.geometry() == window.rect()
    image = window.grab().toImage()
    assert image.pixelColor(window.width() // 2, window.height() // 2).name() == "#000000"
    qtbot.keyClick(window, Qt.Key.Key_Period)
    assert not window.blank.isVisible() and window.player.cursor == cursor
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_B)
    assert not window.blank.isVisible()
    from ddp_viz._qt.keys import shortcuts

    assert any(k == "B, ." for k, _ in shortcuts())  # on the F1 sheet


def test_t_brings_the_next_tensors_when_they_take_turns(qtbot, make_window, settings):
    """Issue 47, 8: every-parameter at 8 ranks on a projector showed ~12 px labels and "+3
    more". Each lane shows one tensor at projector type; T brings the next (round again after
    the last); in a field T is a letter."""
    from ddp_viz._qt.keys import shortcuts
    from ddp_viz.model.timeline import Cursor
    from tests.conftest import load_recording
    from tests.qt_helpers import feed

    window = make_window((1280, 800), settings=settings, lesson_id="every-parameter")
    window.presentation.set_projector(True)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("every-parameter-8-ranks.jsonl"))
    window.player.pause()
    window.player.cursor, window.player.progress = Cursor(1, 3), 1.0
    window.player._emit(entered=True)
    QApplication.processEvents()

    def turns() -> str:
        return " ".join(t.text for t in window.stage.frame().texts if t.key == "turns")

    assert turns().startswith("tensor 1 of 4: ‖0.w‖"), turns()
    assert window.stage.frame().smallest_px() >= 24
    window.stage.setFocus()
    for want in ("tensor 2 of 4: ‖0.b‖", "tensor 3 of 4: ‖2.w‖", "tensor 4 of 4: 2.b"):
        qtbot.keyClick(window, Qt.Key.Key_T)
        assert turns().startswith(want), turns()
        assert window.stage.frame().smallest_px() >= 24
    qtbot.keyClick(window, Qt.Key.Key_T)
    assert turns().startswith("tensor 1 of 4"), turns()
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_T)
    assert turns().startswith("tensor 1 of 4"), turns()
    assert any(k == "T" for k, _ in shortcuts())  # on the F1 sheet


def test_the_data_table_shows_its_values_whole_on_a_projector(qtbot, make_window, settings):
    """Issue 47, 11: with Ctrl+L on a projector the data table showed "-0…": its columns were
    sized for the type it was built in. On a projector it stands under the fields, every value
    whole, and the stage keeps the width it had (no wider column)."""
    window = make_window((1280, 800), settings=settings, lesson_id="buckets")
    window.presentation.set_projector(True)
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.splitters["left"].isVisible())
    QApplication.processEvents()
    table = window.form.table
    assert table.rowCount() >= 3
    fm = table.fontMetrics()
    assert fm.height() >= 24  # projector type
    values = [table.item(r, c).text() for r in range(table.rowCount()) for c in (0, 1)]
    assert any(v.startswith("-") and "." in v for v in values), values  # widths that matter
    for r in range(table.rowCount()):
        for c in (0, 1):
            text = table.item(r, c).text()
            assert fm.horizontalAdvance(text) + 6 <= table.columnWidth(c), (r, c, text)
    fields = window.form.world_size.mapTo(window.form, window.form.world_size.rect().topLeft())
    assert table.mapTo(window.form, table.rect().topLeft()).y() > fields.y()  # under them
    assert window.stage.width() >= 850, window.stage.width()


def test_leaving_projector_mode_gives_the_empty_plots_their_words_in_normal_type(
    qtbot, make_window, settings
):
    """Seen under Xvfb (issue 47, 8 and 11): after Ctrl+P back from a projector, the empty
    plots still said "appears after Run" in projector type, cut at both ends ("ppears after
    Run"). Their words take the theme's type each time the theme changes."""
    import pyqtgraph as pg

    window = make_window((1280, 800), settings=settings)
    window.presentation.set_projector(True)
    QApplication.processEvents()
    plots = window.plots_panel.ensure()  # built in projector type, as after a lecture
    QApplication.processEvents()
    window.presentation.set_projector(False)
    QApplication.processEvents()
    for plot in (plots.loss_plot, plots.param_plot):
        words = [i for i in plot.getPlotItem().items if isinstance(i, pg.TextItem)]
        assert words, plot
        for w in words:
            px = w.textItem.font().pixelSize()
            pt = w.textItem.font().pointSizeF()
            size = px if px > 0 else pt * 96 / 72
            assert size < 20, (w.textItem.toPlainText(), px, pt)
            assert w.textItem.boundingRect().width() < plot.width() * 0.9


def test_a_gif_of_tensors_taking_turns_shows_each_in_its_turn(qtbot, make_window, settings):
    """every-parameter at 8 ranks in projector type: a GIF of the stage showed only the first
    of the four tensors (the T key has no GIF). After each phase's frame come the other
    tensors' pages, in order, and the next phase starts at the first tensor again."""
    from ddp_viz._qt import export
    from ddp_viz._qt.stage import StageWidget
    from ddp_viz.model.timeline import record, walk
    from tests.conftest import load_recording

    window = make_window((1280, 800), settings=settings, lesson_id="every-parameter")
    window.presentation.set_projector(True)
    rec = record(load_recording("every-parameter-8-ranks.jsonl"))
    frames = export.stage_frames(rec, window.theme, window.lesson, size=(889, 472))
    cursors = list(walk(rec.complete_prefix()))
    assert len(frames) == len(cursors) * 4  # four tensors a phase
    stage = StageWidget(window.theme, window.lesson)
    stage.resize(889, 472)
    stage.set_record(rec)
    for i, cursor in enumerate(cursors):
        stage.set_position(cursor, 1.0)
        for page in range(4):
            stage.page = page
            said = stage.frame().text_with_key("turns").text
            assert said.startswith(f"tensor {page + 1} of 4"), said
            want = export._to_pil(stage.grab().toImage()).tobytes()
            assert frames[i * 4 + page].tobytes() == want, (cursor, page)
    stage.deleteLater()
