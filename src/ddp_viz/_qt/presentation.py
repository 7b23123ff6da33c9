"""How the window looks: light/dark theme, projector mode and zoom, remembered between sessions.

Projector mode is for a room: the high-contrast projector theme (24 px text, 4 px lines),
secondary panels folded away so the stage, the code and the plots get the screen.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Signal

from ddp_viz.model.theme import Theme, load_theme

ZOOM_STEPS = (0.6, 0.75, 0.9, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0, 2.5)


class Presentation(QObject):
    changed = Signal(object, bool)  # effective Theme, projector on?

    def __init__(self, settings: QSettings | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.normal = "light"
        self.projector = False
        self.zoom = 1.0
        # False in a window of one's own runs (ddp-viz watch): projector mode, a lecture's,
        # is neither taken from the settings nor written to them there
        self.remember_projector = True
        if settings is not None:
            self.normal = str(settings.value("theme", "light"))
            if self.normal not in ("light", "dark"):
                self.normal = "light"
            self.projector = str(settings.value("projector", "false")).lower() == "true"
            try:
                self.zoom = float(settings.value("zoom", 1.0))
            except (TypeError, ValueError):
                self.zoom = 1.0
            if self.zoom not in ZOOM_STEPS:
                self.zoom = 1.0

    @property
    def theme(self) -> Theme:
        return load_theme("projector" if self.projector else self.normal).scaled(self.zoom)

    def _save_and_emit(self) -> None:
        if self.settings is not None:
            self.settings.setValue("theme", self.normal)
            if self.remember_projector:
                self.settings.setValue("projector", "true" if self.projector else "false")
            self.settings.setValue("zoom", self.zoom)
            self.settings.sync()
        self.changed.emit(self.theme, self.projector)

    def own_runs(self) -> None:
        """This window shows the user's own runs: it opens without the projector mode a
        lecture left on, and switching it here leaves the lecture's setting alone."""
        self.remember_projector = False
        if self.projector:
            self.projector = False
            self.changed.emit(self.theme, self.projector)

    def set_projector(self, on: bool) -> None:
        self.projector = on
        self._save_and_emit()

    def set_normal_theme(self, name: str) -> None:
        self.normal = name
        self.projector = False
        self._save_and_emit()

    def zoom_in(self) -> None:
        self._step_zoom(+1)

    def zoom_out(self) -> None:
        self._step_zoom(-1)

    def zoom_reset(self) -> None:
        self.zoom = 1.0
        self._save_and_emit()

    def _step_zoom(self, direction: int) -> None:
        i = min(range(len(ZOOM_STEPS)), key=lambda k: abs(ZOOM_STEPS[k] - self.zoom))
        self.zoom = ZOOM_STEPS[max(0, min(len(ZOOM_STEPS) - 1, i + direction))]
        self._save_and_emit()
