"""What a lecturer sees while exporting and in full screen (issue 33, item 12): a GIF export
froze the window for ~4.4 s with no progress; the toolbar said "Full screen" in full screen."""

from __future__ import annotations

import pytest
from PIL import Image
from PySide6.QtWidgets import QProgressDialog

from ddp_viz._qt.export import ExportCancelled
from tests.conftest import load_recording
from tests.qt_helpers import feed


def _with_run(qtbot, make_window):
    window = make_window()
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("default-run.jsonl"))
    return window


def test_a_gif_export_reports_progress_and_can_be_cancelled(qtbot, make_window, tmp_path) -> None:
    window = _with_run(qtbot, make_window)
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> bool:
        seen.append((done, total))
        return len(seen) < 3  # cancel on the third frame

    fa = window.file_actions
    path = tmp_path / "cancelled.gif"
    with pytest.raises(ExportCancelled):
        fa.export_gif(path, progress=progress)
    assert not path.exists() and [d for d, _ in seen] == [1, 2, 3]
    assert all(total == seen[0][1] > 3 for _, total in seen)


def test_the_dialogs_gif_export_shows_a_cancellable_progress(
    qtbot, make_window, tmp_path, monkeypatch
) -> None:
    window = _with_run(qtbot, make_window)
    fa = window.file_actions
    result = fa.export_gif_shown(tmp_path / "shown.gif")
    dialog = fa.progress_dialog
    assert isinstance(dialog, QProgressDialog) and dialog.minimumDuration() <= 1000
    assert result == tmp_path / "shown.gif" and result.exists()
    monkeypatch.setattr(QProgressDialog, "wasCanceled", lambda self: True)  # Cancel pressed
    result = fa.export_gif_shown(tmp_path / "stopped.gif")
    assert "cancelled" in result and not (tmp_path / "stopped.gif").exists()


def test_the_full_screen_button_says_how_to_leave(qtbot, make_window) -> None:
    window = make_window()
    assert window.fullscreen_action.text() == "Full screen"
    window.toggle_fullscreen()
    qtbot.waitUntil(window.isFullScreen, timeout=10_000)
    qtbot.waitUntil(lambda: window.fullscreen_action.text() == "Leave full screen", timeout=10_000)
    window.toggle_fullscreen()
    qtbot.waitUntil(lambda: window.fullscreen_action.text() == "Full screen", timeout=10_000)


def test_the_gif_dialog_shows_at_once_and_moves_while_the_file_is_written(
    qtbot, make_window, tmp_path, monkeypatch
) -> None:
    """Issue 47, 10: the frames took under the dialog's one second and the write 2–3 s more
    with no call to setValue, so no dialog ever showed and the window kept the file dialog's
    picture. The dialog is up from the start and moves frame by frame while it writes."""
    window = _with_run(qtbot, make_window)
    seen: list[tuple[bool, str, int, int]] = []
    real = QProgressDialog.setValue

    def set_value(self, value: int) -> None:  # as it stands when told (the last one closes it)
        seen.append((self.isVisible(), self.labelText(), value, self.maximum()))
        real(self, value)

    monkeypatch.setattr(QProgressDialog, "setValue", set_value)
    path = tmp_path / "seen.gif"
    assert window.file_actions.export_gif_shown(path) == path and path.exists()
    with Image.open(path) as gif:
        frames = gif.n_frames
    calls = [s for s in seen if s[2] > 0]
    assert calls and all(visible for visible, *_ in calls), calls  # shown from the first frame
    writing = [value for _, label, value, _ in calls if label.startswith("Writing")]
    assert len(writing) >= frames  # one step a frame's palette, then the file
    assert writing == sorted(writing) and writing[-1] == calls[-1][3]  # to the end
