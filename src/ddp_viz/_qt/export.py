"""Pictures of a recorded run for slides: PNG of a widget, animated GIF of the stage."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageColor
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


def theme_colours(theme: Theme) -> list[str]:
    """The colours a frame names things by (ranks, variants, checks, text, ground)."""
    named = [theme.window, theme.panel, theme.text, theme.muted, theme.grid, theme.accent]
    return [*named, theme.ok, theme.bad, theme.highlight, *theme.ranks]


def paletted(frame: Image.Image, keep: Sequence[str] = ()) -> Image.Image:
    """``frame`` in 255 colours: ``keep``'s exactly, the rest chosen for the frame. A palette
    chosen for the frame alone merges colours a legend tells apart once a heatmap takes the
    entries: PowerSGD r=4's yellow came out as fp16's orange in the comm-hooks GIF."""
    rgb = frame.convert("RGB")
    exact = list(dict.fromkeys(ImageColor.getrgb(c)[:3] for c in keep))[:64]
    free = 255 - len(exact)
    chosen = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=free).getpalette() or []
    entries = [v for colour in exact for v in colour] + chosen[: 3 * free]
    palette = Image.new("P", (1, 1))
    palette.putpalette(entries)
    out = rgb.quantize(palette=palette, dither=Image.Dither.NONE)
    if not exact:
        return out
    # PIL finds the nearest entry through a coarse cache (5 bits a channel), so a kept colour
    # could still land on a near adaptive one: its pixels are pointed at its own entry here
    pixels = np.asarray(rgb, dtype=np.int32)
    packed = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
    keys = np.array([(r << 16) | (g << 8) | b for r, g, b in exact], dtype=np.int32)
    order = np.argsort(keys)
    at = np.clip(np.searchsorted(keys[order], packed), 0, len(keys) - 1)
    hit = keys[order][at] == packed
    index = np.asarray(out).copy()
    index[hit] = order[at[hit]]
    fixed = Image.fromarray(index.astype(np.uint8))  # "L"; its palette makes it "P"
    fixed.putpalette(entries)
    return fixed


def save_gif(
    frames: list[Image.Image],
    path: str | Path,
    fps: float | None = None,
    progress: Progress | None = None,
    keep: Sequence[str] = (),
) -> Path:
    """Write ``frames``, ``keep``'s colours exact in every one (see :func:`paletted`);
    ``progress(done, total)`` is told after each frame's palette (the slow part: ~0.1 s a
    frame, seconds for a run, when nothing on screen moved) and when written."""
    path = Path(path)
    duration = round(1000 / fps) if fps else PHASE_HOLD_MS
    paletted_frames: list[Image.Image] = []
    for frame in frames:
        paletted_frames.append(paletted(frame, keep))
        if progress is not None and not progress(len(paletted_frames), len(frames) + 1):
            raise ExportCancelled
    paletted_frames[0].save(
        path,
        save_all=True,
        append_images=paletted_frames[1:],
        duration=duration,
        loop=0,
        optimize=False,
        disposal=1,
    )
    if progress is not None:
        progress(len(frames) + 1, len(frames) + 1)
    return path
