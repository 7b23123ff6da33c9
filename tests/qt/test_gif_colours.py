"""A GIF keeps the colours the stage names things by (issue 47 pass under X): the comm-hooks
GIF's P and Q frame drew PowerSGD r=4's yellow legend in fp16's orange, once the heatmaps had
taken the palette's entries."""

from __future__ import annotations

from PIL import Image, ImageColor

from ddp_viz._qt.export import paletted, save_gif, stage_frames, theme_colours
from ddp_viz.model.course import load_course
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording


def _colours(image: Image.Image) -> set[tuple[int, int, int]]:
    rgb = image.convert("RGB")
    return {c for _, c in rgb.getcolors(maxcolors=1 << 20)}


def _pq_frame(theme_name: str) -> tuple[Image.Image, list[str]]:
    """The comm-hooks stage at step 12's P and Q phase (heatmaps beside the legend)."""
    from ddp_viz._qt.export import _to_pil
    from ddp_viz._qt.stage import StageWidget

    theme = load_theme(theme_name)
    rec = record(load_recording("comm-hooks-14-steps.jsonl"))
    stage = StageWidget(theme, load_course().get("comm-hooks"))
    stage.resize(1280, 720)
    stage.set_record(rec)
    stage.set_position(Cursor(11, 2), 1.0)
    assert "P and Q" in stage.frame().all_text()
    frame = _to_pil(stage.grab().toImage())
    stage.deleteLater()
    legend = [theme.rank_color(i) for i in range(6)]  # the six variants' colours
    return frame, legend


def test_the_legend_colours_stay_exact_beside_the_heatmaps(qtbot) -> None:
    for name in ("light", "projector"):
        frame, legend = _pq_frame(name)
        wanted = {ImageColor.getrgb(c)[:3] for c in legend}
        assert wanted <= _colours(frame), name  # the stage drew each exactly
        kept = _colours(paletted(frame, theme_colours(load_theme(name))))
        assert wanted <= kept, (name, wanted - kept)


def test_a_palette_of_the_frame_alone_loses_a_named_colour() -> None:
    """The case the kept colours answer: many shades (a heatmap) beside small patches of
    named colours; a palette chosen for the frame alone merges some of them."""
    theme = load_theme("light")
    frame = Image.new("RGB", (256, 256))
    frame.putdata([(x, y, (x * y) % 256) for y in range(256) for x in range(256)])
    for i, colour in enumerate(theme.ranks):
        frame.paste(ImageColor.getrgb(colour)[:3], (4 + 12 * i, 4, 12 + 12 * i, 12))
    wanted = {ImageColor.getrgb(c)[:3] for c in theme.ranks}
    assert not wanted <= _colours(paletted(frame))  # without: some named colour is gone
    assert wanted <= _colours(paletted(frame, theme_colours(theme)))


def test_the_written_gif_keeps_them_in_every_frame(tmp_path, qtbot) -> None:
    theme = load_theme("light")
    rec = record(load_recording("comm-hooks-14-steps.jsonl"))
    frames = stage_frames(rec, theme, load_course().get("comm-hooks"), max_steps=1)
    frames.append(_pq_frame("light")[0])
    path = save_gif(frames, tmp_path / "run.gif", keep=theme_colours(theme))
    gif = Image.open(path)
    legend = {ImageColor.getrgb(theme.rank_color(i))[:3] for i in range(6)}
    gif.seek(gif.n_frames - 1)  # the P and Q frame
    assert legend <= _colours(gif)
