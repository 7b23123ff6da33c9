"""Colour themes (assets/themes/*.toml). Pure data; the Qt layer turns it into palettes."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace

from ddp_viz.model.assets import asset

THEMES = ("light", "dark", "projector")


@dataclass(frozen=True)
class Theme:
    name: str
    window: str
    panel: str
    text: str
    muted: str
    grid: str
    accent: str
    ok: str
    bad: str
    highlight: str
    ranks: tuple[str, ...]
    markers: tuple[str, ...]
    font_px: int
    line_px: int

    def rank_color(self, rank: int) -> str:
        return self.ranks[rank % len(self.ranks)]

    def rank_marker(self, rank: int) -> str:
        return self.markers[rank % len(self.markers)]

    def scaled(self, zoom: float) -> Theme:
        return replace(self, font_px=max(8, round(self.font_px * zoom)))

    @property
    def dark(self) -> bool:
        h = self.window.lstrip("#")
        r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
        return (0.299 * r + 0.587 * g + 0.114 * b) < 128


def load_theme(name: str) -> Theme:
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; choose one of {', '.join(THEMES)}")
    data = tomllib.loads(asset("themes", f"{name}.toml").read_text(encoding="utf-8"))
    data["ranks"] = tuple(data["ranks"])
    data["markers"] = tuple(data["markers"])
    return Theme(**data)
