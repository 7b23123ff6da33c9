"""Moving through a run from the window: the toolbar's step buttons and slider, and what
each move of the player shows (the stage, the code's section, the plots held to it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.model.scenes import phase_words
from ddp_viz.model.timeline import Cursor

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QLabel, QSlider

    from ddp_viz._qt.code_view import CodeView
    from ddp_viz._qt.player import Player
    from ddp_viz._qt.plots import Plots
    from ddp_viz._qt.plots_panel import PlotsPanel
    from ddp_viz._qt.stage import StageWidget
    from ddp_viz.model.lesson import Lesson
    from ddp_viz.model.session import SessionController


class PlayerMoves:
    """For ``MainWindow``: its player's moves and the controls that make them."""

    session: SessionController
    player: Player
    stage: StageWidget
    code_view: CodeView
    lesson: Lesson
    position_label: QLabel
    step_slider: QSlider
    plots_panel: PlotsPanel
    play_action: QAction
    plots: Plots
    _toolbar_due: tuple[str, int] | None = None  # the position the stage paints next

    def _on_first(self) -> None:
        self.session.step_by_hand()
        self.player.pause()
        self.player.cursor, self.player.progress = Cursor(), 1.0
        self.player._emit(entered=True)

    def _on_back(self) -> None:
        self.session.step_by_hand()
        self.player.step_back()

    def _on_forward(self) -> None:
        self.session.step_by_hand()
        self.player.step_forward()

    @property
    def streaming(self) -> bool:
        """The view follows a run as it comes: the newest step, drawn as the run sends it."""
        return self.player.follow_latest and self.session.busy

    def _on_player_position_changed(self, cursor: Cursor, progress: float) -> None:
        streaming = self.streaming
        self.stage.set_position(cursor, progress, streaming)
        self.code_view.set_section(self.stage.frame().section)
        rec = self.player.record
        total = rec.steps_total() if rec else 0
        text = (
            f" step {cursor.step + 1}/{max(total, 1)} · "
            f"{phase_words(self.lesson.scene)[cursor.phase]} "
            if rec is not None
            else ""
        )
        if streaming:  # the stage paints this step a moment later: the toolbar with it
            self._toolbar_due = (text, cursor.step)
        else:
            self._toolbar_due = None
            self._show_toolbar_position(text, cursor.step, empty=rec is None)
        if self.plots_panel.built:  # no point before the stage has shown its phase
            held = None if self.player.follow_latest else cursor
            self.plots.hold_to(held, progress, later=streaming)
        if rec is not None and progress >= 1.0 and self.plots_panel.built and not streaming:
            # (following a streaming run, the plots' own updates move the arrows, at their rate)
            self.plots.show_step(rec, cursor)
        self.session.on_stage_position(cursor, progress)

    def _show_toolbar_position(self, text: str, step: int, empty: bool = False) -> None:
        self.position_label.setText(text)
        self.step_slider.blockSignals(True)
        if empty:  # no run on the stage (a new lesson)
            self.step_slider.setMaximum(0)
        self.step_slider.setValue(step)
        self.step_slider.blockSignals(False)

    def _on_stage_streamed_shown(self) -> None:
        # following a run, the toolbar said the newest step while the stage, painted 12 ms
        # later or after the plots' turn, still showed the one before ("step 188 of 200"
        # beside "189/200")
        if self._toolbar_due is not None:
            self._show_toolbar_position(*self._toolbar_due)
            self._toolbar_due = None

    def _on_player_playing_changed(self, playing: bool) -> None:
        self.play_action.setText("Pause" if playing else "Play")

    def _on_follow_toggled(self, on: bool) -> None:
        self.session.set_follow_latest(on)

    def _on_step_slider_changed(self, value: int) -> None:
        self.player.pause()
        self.session.step_by_hand()
        self.player.seek_step(value)
