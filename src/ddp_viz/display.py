"""Can Qt open a window here? Checked before Qt loads, so a missing system library gets a
message that names it and the command that installs it, instead of Qt's abort.

Qt's xcb platform plugin (X11) needs a few libxcb libraries that a stock Debian or Ubuntu
system without a desktop lacks. ``ldd`` on the plugin lists the ones that do not resolve.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

# shared library -> the Debian/Ubuntu package that provides it
XCB_PACKAGES = {
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}
# Everything the window needs on a stock Debian 12 (the README's apt-get line).
APT_LINE = (
    "sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxcb-image0 "
    "libxcb-render-util0 libxcb-xkb1 libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0 libegl1"
)


def uses_xcb(env: dict[str, str] | None = None) -> bool:
    """Will Qt pick its X11 (xcb) plugin? Only on Linux with an X display and no override."""
    env = dict(os.environ) if env is None else env
    platform = env.get("QT_QPA_PLATFORM", "")
    if platform:
        return platform.startswith("xcb")
    return (
        sys.platform.startswith("linux")
        and bool(env.get("DISPLAY"))
        and not bool(env.get("WAYLAND_DISPLAY"))
    )


def xcb_plugin() -> Path | None:
    spec = find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        plugin = Path(root) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if plugin.is_file():
            return plugin
    return None


def missing_libraries(ldd_output: str) -> list[str]:
    """Library names ``ldd`` could not resolve, each once, in order."""
    found = re.findall(r"^\s*(\S+)\s+=>\s+not found", ldd_output, re.MULTILINE)
    return list(dict.fromkeys(found))


def missing_xcb_libraries() -> list[str]:
    plugin = xcb_plugin()
    if plugin is None:
        return []
    ldd = os.environ.get("DDP_VIZ_LDD", "ldd")  # tests point this at a stand-in
    try:
        out = subprocess.run(
            [ldd, str(plugin)], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []  # no ldd: let Qt try, and say what it says
    return missing_libraries(out)


def xcb_problem() -> str | None:
    """A message for the user when the X11 window cannot open, else None."""
    if not uses_xcb():
        return None
    missing = missing_xcb_libraries()
    if not missing:
        return None
    packages = sorted({XCB_PACKAGES.get(lib, lib) for lib in missing})
    return (
        "ddp-viz: the window cannot open: Qt's X11 plugin needs system libraries that are "
        f"missing: {', '.join(missing)}.\n"
        f"Install them with:\n    sudo apt-get install {' '.join(packages)}\n"
        f"(everything the window needs on Debian/Ubuntu: {APT_LINE})\n"
        "Without a window, `ddp-viz run` works headless, and "
        "`QT_QPA_PLATFORM=offscreen ddp-viz --run --screenshot out.png --quit` renders one."
    )
