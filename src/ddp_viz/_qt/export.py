"""Pictures of a recorded run for slides: PNG of a widget, animated GIF of the stage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PIL import Image
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QWidget

from ddp_viz._qt.stage import StageWidget
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import Cursor, RunRecord, walk

PHASE_HOLD_MS = 1400  # one frame per phase: how long each stays on screen
MAX_GIF_STEPS = 12  # a GIF of a long run shows its first steps (the rest are alike)
MAX_PAGES = 8  # pages of a phase a GIF shows (a stage whose tensors take turns)
Progress = Callable[[int, int], bool]  # (done, total) -> go on?


class ExportCancelled(Exception):
    """The user cancelled an export: nothing was written."""


def save_png(widget: QWidget, path: str | Path) -> Path:
    path = Path(path)
    if not widget.grab().save(str(path), "PNG"):
        raise OSError(f"could not write {path}")
    return path


def _to_pil(image: QImage) -> Image.Image:
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    data = bytes(image.constBits())
    return Image.frombuffer(
        "RGBA", (image.width(), image.height()), data, "raw", "RGBA", image.bytesPerLine(), 1
    ).convert("RGB")


def stage_frames(
    record: RunRecord,
    theme: Theme,
    lesson: Lesson,
    size: tuple[int, int] = (1280, 720),
    fps: float | None = None,
    phase_ms: int = 1100,
    max_steps: int = MAX_GIF_STEPS,
    progress: Progress | None = None,
) -> list[Image.Image]:
    """Render the stage for every phase of the recorded run (or at ``fps`` through them).
    ``progress(done, total)`` is told after each frame (one more unit is left for saving);
    when it returns False the export stops (:class:`ExportCancelled`)."""
    steps = min(record.complete_prefix(), max_steps)
    if steps == 0:
        raise ValueError("the run has no complete step to draw")
    stage = StageWidget(theme, lesson)
    stage.resize(*size)
    stage.set_record(record)
    frames: list[Image.Image] = []
    per_phase = max(1, round(phase_ms / 1000 * fps)) if fps else 1
    cursors = list(walk(steps))
    total = len(cursors) * per_phase + 1
    try:
        for cursor in cursors:
            for k in range(1, per_phase + 1):
                stage.set_position(Cursor(cursor.step, cursor.phase), k / per_phase)
                frames.append(_to_pil(stage.grab().toImage()))
                if progress is not None and not progress(len(frames), total):
                    raise ExportCancelled
            turns = _other_pages(stage)  # the tensors taking turns: each, as T would show it
            frames += turns
            total += len(turns)
    finally:
        stage.deleteLater()
    return frames


def _other_pages(stage: StageWidget) -> list[Image.Image]:
    """The stage's other pages at its position (every-parameter's tensors at 8 ranks on a
    projector take turns: a GIF of page 0 alone showed one tensor of four); back to page 0."""
    first = _turns(stage)
    pages: list[Image.Image] = []
    while first and len(pages) < MAX_PAGES:
        stage.turn_page()
        if _turns(stage) == first:
            break
        pages.append(_to_pil(stage.grab().toImage()))
    stage.page = 0
    return pages


def _turns(stage: StageWidget) -> str:
    said = stage.frame().text_with_key("turns")
    return said.text if said is not None else ""


def save_gif(
    frames: list[Image.Image],
    path: str | Path,
    fps: float | None = None,
    progress: Progress | None = None,
) -> Path:
    """Write ``frames``; ``progress(done, total)`` is told after each frame's palette (the
    slow part: ~0.1 s a frame, seconds for a run, when nothing on screen moved) and when written."""
    path = Path(path)
    duration = round(1000 / fps) if fps else PHASE_HOLD_MS
    paletted: list[Image.Image] = []
    for frame in frames:
        paletted.append(frame.convert("P", palette=Image.Palette.ADAPTIVE, colors=255))
        if progress is not None and not progress(len(paletted), len(frames) + 1):
            raise ExportCancelled
    paletted[0].save(
        path,
        save_all=True,
        append_images=paletted[1:],
        duration=duration,
        loop=0,
        optimize=False,
        disposal=1,
    )
    if progress is not None:
        progress(len(frames) + 1, len(frames) + 1)
    return path
