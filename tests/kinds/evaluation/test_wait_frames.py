"""A waiting rank's frames name their file from its package, on every system: Windows' frames
spell their paths with backslashes (and drive letters, spaces, accents in the user's home)."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

import pytest

from ddp_viz.kinds.evaluation.waits import short

HOMES = [
    (PureWindowsPath, r"C:\Users\José Núñez\ddp viz\.venv\Lib"),
    (PurePosixPath, "/home/José Núñez/ddp viz/.venv/lib/python3.11"),
]


@pytest.mark.parametrize(("flavour", "home"), HOMES)
def test_a_frame_in_torch_is_named_from_torch(flavour, home) -> None:
    path = flavour(home, "site-packages", "torch", "distributed", "distributed_c10d.py")
    assert short(str(path)) == "torch/distributed/distributed_c10d.py"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (r"D:\work\ddp-viz\src\ddp_viz\engine\rank.py", "ddp_viz/engine/rank.py"),
        (r"C:\Users\Zoë\train.py", "train.py"),  # neither: the file's own name
        ("/home/zoë/src/ddp_viz/engine/rank.py", "ddp_viz/engine/rank.py"),
        ("/home/zoë/train.py", "train.py"),
    ],
)
def test_ours_from_src_and_anything_else_by_its_name(path: str, expected: str) -> None:
    assert short(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # a checkout under ~/src/: named from its own src/, not from the home's
        ("/home/zoë/src/ddp-viz/src/ddp_viz/engine/rank.py", "ddp_viz/engine/rank.py"),
        (r"C:\src\work\ddp-viz\src\ddp_viz\engine\rank.py", "ddp_viz/engine/rank.py"),
        # a venv kept inside another package's site-packages: the innermost one names it
        (
            "/opt/site-packages/app/.venv/lib/site-packages/torch/distributed/c10d_logger.py",
            "torch/distributed/c10d_logger.py",
        ),
        ("train.py", "train.py"),  # no folder at all
    ],
)
def test_the_last_marker_names_the_package(path: str, expected: str) -> None:
    assert short(path) == expected
