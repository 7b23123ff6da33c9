"""Where the shipped content (scenarios, lessons, quiz, themes) lives."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def assets_dir() -> Path:
    """The assets/ folder: beside the package in a source checkout, or packaged inside it."""
    for candidate in (_HERE.parent / "assets", _HERE.parents[2] / "assets"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("ddp-viz assets/ folder not found")


def asset(*parts: str) -> Path:
    return assets_dir().joinpath(*parts)


def default_scenario_path() -> Path:
    return asset("scenarios", "ddp-pattern.toml")
