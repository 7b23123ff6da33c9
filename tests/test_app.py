"""Starting the app as a user does: no display, scripted screenshots."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PIL import Image


def app(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ddp_viz", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_without_a_display_it_says_how_to_use_it_headless() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    res = app(env=env, timeout=30)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no display" in lines[0] and "ddp-viz run" in lines[0] and "--screenshot" in lines[0]


def test_bad_size_is_refused() -> None:
    res = app("--size", "huge", env=dict(os.environ, QT_QPA_PLATFORM="offscreen"), timeout=30)
    assert res.returncode == 2 and "--size" in res.stderr


@pytest.mark.gloo
def test_scripted_run_and_screenshot(tmp_path) -> None:
    out = tmp_path / "window.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    res = app("--run", "--screenshot", str(out), "--size", "1280x800", "--quit", env=env)
    assert res.returncode == 0, res.stderr
    with Image.open(out) as img:
        assert img.size == (1280, 800)
        colors = img.convert("RGB").getcolors(maxcolors=1_000_000)
        assert colors is not None and len(colors) > 200  # a painted window, not a blank one
