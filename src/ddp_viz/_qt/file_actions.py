"""File menu work: load and save scenarios, export pictures, animations, events and traces.

Each action is a method that takes a path (tests and the CLI use those); :meth:`dialog` asks
for the path first and reports errors in a message box.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QSettings, QStandardPaths, Qt
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMessageBox,
    QProgressDialog,
    QWidget,
)

from ddp_viz._qt import export
from ddp_viz._qt.form_labels import field_message
from ddp_viz.model.exports import chrome_trace_json, events_jsonl
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.session import SessionController
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import RunRecord


class _Form(Protocol):
    def set_scenario(self, s: Scenario) -> None: ...
    def scenario(self) -> Scenario | None: ...


class Window(Protocol):
    """What the file actions need of the main window."""

    form: _Form
    session: SessionController
    stage: QWidget
    theme: Theme
    lesson: Lesson
    status: QLabel
    settings: QSettings | None


FILTERS = {
    "scenario": "Scenario (*.toml)",
    "png": "PNG image (*.png)",
    "gif": "Animated GIF (*.gif)",
    "events": "JSON lines (*.jsonl)",
    "trace": "Chrome trace (*.json)",
}


class FileActions:
    def __init__(self, window: Window) -> None:
        self.window = window

    # --- scenarios ----------------------------------------------------------------------------
    def load_scenario(self, path: str | Path) -> Scenario:
        scenario = Scenario.load(path)  # ScenarioError names the field
        self.window.form.set_scenario(scenario)
        return scenario

    def save_scenario(self, path: str | Path) -> Path:
        scenario = self.window.form.scenario()
        if scenario is None:
            raise ScenarioError("scenario", "fix the marked fields before saving")
        path = Path(path)
        path.write_text(scenario.to_toml(), encoding="utf-8")
        return path

    # --- exports --------------------------------------------------------------------------------
    def _record(self) -> RunRecord:  # with at least one complete step
        rec = self.window.session.record
        if rec.run is None or rec.complete_prefix() == 0:
            raise ValueError("run something first: there is no recorded step to export")
        return rec

    def export_window_png(self, path: str | Path) -> Path:
        return export.save_png(self.window, path)

    def export_stage_png(self, path: str | Path) -> Path:
        return export.save_png(self.window.stage, path)

    def export_gif(
        self, path: str | Path, fps: float | None = None, progress: export.Progress | None = None
    ) -> Path:
        rec, theme, lesson = self._record(), self.window.theme, self.window.lesson
        if progress is None:
            frames = export.stage_frames(rec, theme, lesson, fps=fps)
            return export.save_gif(frames, path, fps, keep=export.theme_colours(theme))
        told = progress  # one scale for both halves: each frame drawn, then its palette
        drawn = export.stage_frames(
            rec, theme, lesson, fps=fps, progress=lambda done, total: told(done, 2 * total - 1)
        )
        n = len(drawn)
        return export.save_gif(
            drawn,
            path,
            fps,
            progress=lambda done, total: told(n + done, n + total),
            keep=export.theme_colours(theme),
        )

    def export_gif_shown(self, path: str | Path) -> Path | str:
        """Export a GIF with a progress dialog (shown when it takes over a second) whose
        Cancel stops it: drawing the frames and encoding them takes a few seconds."""
        dialog = QProgressDialog("Drawing the stage's frames…", "Cancel", 0, 1, self.window)
        dialog.setWindowTitle("Export the run as a GIF")
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        # at once: the frames took under a second and the write seconds more, with no
        # dialog and the file dialog's picture left on the window (issue 47, 10)
        dialog.setMinimumDuration(0)
        dialog.setValue(0)
        dialog.show()
        QApplication.processEvents()  # the window repaints where the file dialog was
        self.progress_dialog = dialog  # tests look at it
        labels: list[str] = []

        def step(done: int, total: int) -> bool:
            dialog.setMaximum(total)
            if 2 * done > total and not labels:  # every frame drawn: their palettes, the file
                labels.append("Writing the GIF…")
                dialog.setLabelText(labels[0])
            dialog.setValue(done)  # a modal dialog's setValue lets the window repaint
            return not dialog.wasCanceled()

        try:
            return self.export_gif(path, progress=step)
        except export.ExportCancelled:
            return "GIF export cancelled: nothing was written."
        finally:
            dialog.reset()
            dialog.close()

    def export_events(self, path: str | Path) -> Path:
        rec = self.window.session.record
        if rec.run is None:
            raise ValueError("run something first: there are no events to export")
        path = Path(path)
        path.write_text(events_jsonl(rec, self.window.lesson.id), encoding="utf-8")
        return path

    def export_trace(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(chrome_trace_json(self._record()), encoding="utf-8")
        return path

    # --- dialogs ----------------------------------------------------------------------------------
    def start_folder(self, kind: str) -> Path:
        """The folder a dialog opens in: the last one used for this kind of file, else the
        last one used for any file (a lecturer exports a PNG, then a GIF, to one folder), else
        the user's Pictures (pictures) or Documents folder, else home; never the working
        folder."""
        settings = self.window.settings
        for key in (f"folders/{kind}", "folders/last"):
            last = settings.value(key, "") if settings is not None else ""
            if last and Path(str(last)).is_dir():
                return Path(str(last))
        where = (
            QStandardPaths.StandardLocation.PicturesLocation
            if kind in ("png", "gif")
            else QStandardPaths.StandardLocation.DocumentsLocation
        )
        found = QStandardPaths.writableLocation(where)
        return Path(found) if found and Path(found).is_dir() else Path.home()

    def remember_folder(self, kind: str, path: str | Path) -> None:
        if self.window.settings is not None:
            self.window.settings.setValue(f"folders/{kind}", str(Path(path).parent))
            self.window.settings.setValue("folders/last", str(Path(path).parent))

    def _ask(self, kind: str, title: str, save: bool, name: str = "") -> str | None:
        ask = QFileDialog.getSaveFileName if save else QFileDialog.getOpenFileName
        start = str(self.start_folder(kind) / name) if name else str(self.start_folder(kind))
        path, _ = ask(self.window, title, start, FILTERS[kind])  # type: ignore[arg-type]
        if path:
            self.remember_folder(kind, path)
        return path or None

    def _run(self, action, *args) -> None:  # type: ignore[no-untyped-def]
        try:
            result = action(*args)
        except (OSError, ValueError) as exc:  # ScenarioError is a ValueError
            text = field_message(exc.field, exc.message) if isinstance(exc, ScenarioError) else ""
            QMessageBox.warning(self.window, "ddp-viz", text or str(exc))
            return
        if isinstance(result, Path):
            self.window.status.setText(f"Saved {result}")
        elif isinstance(result, str):  # what happened (open_run's own line, a cancel)
            self.window.status.setText(result)
        else:
            self.window.status.setText("Loaded.")

    def open_run(self, path: str | Path) -> str:
        from ddp_viz._qt.recording import open_recording

        text = open_recording(self.window, path)
        # File ▸ Open run starts where this one was, also when it came from the command line
        self.remember_folder("events", Path(path).resolve())
        return text

    def dialog(self, name: str) -> None:
        """Ask for a path, then do ``name`` (a key of :data:`DIALOGS`), reporting any error."""
        kind, title, default = DIALOGS[name]
        if path := self._ask(kind, title, save=name not in OPENS, name=default):
            self._run(getattr(self, SHOWN.get(name, name)), path)


# actions that show their progress when asked for from a dialog
SHOWN = {"export_gif": "export_gif_shown"}
# action -> (file kind, dialog title, suggested name)
OPENS = ("load_scenario", "open_run")
DIALOGS = {
    "load_scenario": ("scenario", "Load scenario", ""),
    "open_run": ("events", "Open a recorded run", ""),
    "save_scenario": ("scenario", "Save scenario", "scenario.toml"),
    "export_window_png": ("png", "Export the window", "ddp-viz.png"),
    "export_stage_png": ("png", "Export the stage", "ddp-stage.png"),
    "export_gif": ("gif", "Export the run as a GIF", "ddp-run.gif"),
    "export_events": ("events", "Export events", "ddp-run.jsonl"),
    "export_trace": ("trace", "Export Chrome trace", "ddp-trace.json"),
}
