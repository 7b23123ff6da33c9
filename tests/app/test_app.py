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


@pytest.mark.slow
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


LDD_MISSING = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /x/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-icccm.so.4 => not found
"""


def test_missing_x11_libraries_are_named_with_the_command_that_installs_them(tmp_path) -> None:
    from ddp_viz.display import missing_libraries

    assert missing_libraries(LDD_MISSING) == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert missing_libraries("\tlibc.so.6 => /lib/libc.so.6 (0x1)\n") == []
    fake_ldd = tmp_path / "ldd"
    fake_ldd.write_text(f"#!/bin/sh\ncat <<'EOF'\n{LDD_MISSING}EOF\n")
    fake_ldd.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env |= {"DISPLAY": ":97", "DDP_VIZ_LDD": str(fake_ldd)}
    res = app(env=env, timeout=30)
    assert res.returncode == 2, res.stderr
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1" in res.stderr
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1\n" in res.stderr
    assert "Aborted" not in res.stderr and "qt.qpa.plugin" not in res.stderr


def test_the_offscreen_platform_needs_no_x11_libraries() -> None:
    from ddp_viz.display import uses_xcb

    assert not uses_xcb({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"})
    assert uses_xcb({"DISPLAY": ":0"}) == sys.platform.startswith("linux")
    assert not uses_xcb({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"})


@pytest.mark.slow
def test_a_recording_opens_from_the_command_line_and_the_app_leaves(tmp_path) -> None:
    """`ddp-viz FILE.jsonl --screenshot F --quit` saves and exits (it once hung: the
    recording was shown to its end before the event loop ran, and the quit was lost)."""
    from tests.conftest import DATA

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path))
    for name in ("watched-2-ranks.jsonl", "default-run.jsonl"):
        shot = tmp_path / f"{name}.png"
        res = app(str(DATA / name), "--screenshot", str(shot), "--quit", env=env, timeout=60)
        assert res.returncode == 0, res.stderr
        assert Image.open(shot).size[0] > 0
    res = app(str(tmp_path / "missing.jsonl"), "--quit", env=env, timeout=60)
    assert res.returncode == 2 and "cannot read" in res.stderr
