"""The wheel a normal ``pip install .`` gets: it ships the whole assets/ folder and runs from
anywhere, without the repository (the editable install of development hides both problems)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What setuptools reads to build the wheel; copied so the build never writes into the checkout.
PROJECT_FILES = ("pyproject.toml", "README.md", "MANIFEST.in", "setup.cfg", "setup.py")
PROJECT_DIRS = ("src", "assets")
ASSETS_PACKAGE = "ddp_viz_assets"  # where pyproject.toml installs assets/ (see model/assets.py)
PROBE = "wheel-probe "


def _pip(*args: str, timeout: float = 240) -> None:
    env = {**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert res.returncode == 0, f"pip {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}"


def _is_cache(path: Path) -> bool:
    """Byte code and hidden files (.DS_Store, editor droppings) are not content."""
    return path.suffix == ".pyc" or any(
        part == "__pycache__" or part.startswith(".") for part in path.parts
    )


def _files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not _is_cache(p.relative_to(folder))
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Iterator[Path]:
    """A snapshot of the project's sources: the build writes build/ and *.egg-info beside them
    (never in the checkout), and the checks compare the wheel with exactly what it was built
    from, even while someone edits the checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    project = tmp / "project"
    project.mkdir()
    for name in PROJECT_FILES:
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, project / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in PROJECT_DIRS:
        shutil.copytree(REPO / name, project / name, ignore=ignore)
    yield project
    shutil.rmtree(tmp, ignore_errors=True)  # the snapshot, its build/ and the wheel


@pytest.fixture(scope="module")
def wheel(project: Path) -> Path:
    """The wheel, built with the venv's setuptools and no network."""
    out = project.parent / "dist"
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir",
         "-w", str(out), str(project))  # fmt: skip
    (whl,) = out.glob("ddp_viz-*.whl")
    return whl


@pytest.mark.timeout(300)
def test_wheel_ships_every_asset_and_every_module(project: Path, wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assets = _files(project / "assets")
    assert assets, "assets/ is empty?"
    missing = [a for a in assets if f"{ASSETS_PACKAGE}/{a}" not in names]
    assert not missing, f"assets/ files missing from the wheel (package-data?): {missing}"
    # setup.py finds the packages: a new subpackage (a kind's folder) joins by being there.
    code = _files(project / "src" / "ddp_viz")
    missing = [c for c in code if f"ddp_viz/{c}" not in names]
    assert not missing, f"src/ddp_viz files missing from the wheel ([tool.setuptools]): {missing}"
    top = {n.split("/", 1)[0] for n in names}
    stray = [
        t for t in top if t not in {"ddp_viz", ASSETS_PACKAGE} and not t.endswith(".dist-info")
    ]
    assert not stray, f"unexpected top-level entries in the wheel: {stray}"


# Runs the CLI as ``python -m ddp_viz`` would, after printing where everything came from.
WRAPPER = f"""
import json, runpy, sys
from importlib.util import find_spec
import ddp_viz
from ddp_viz.model import assets
where = {{
    "ddp_viz": ddp_viz.__file__,
    "engine": find_spec("ddp_viz.engine").origin,
    "assets": str(assets.assets_dir()),
    "scenario": str(assets.default_scenario_path()),
}}
print({PROBE!r} + json.dumps(where), file=sys.stderr, flush=True)
sys.argv = ["ddp-viz", *sys.argv[1:]]
runpy.run_module("ddp_viz", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
@pytest.mark.gloo
@pytest.mark.timeout(300)
def test_installed_wheel_runs_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--no-compile", "--target", str(site), str(wheel))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The repo venv's interpreter brings the dependencies (torch, PySide6, ...); PYTHONPATH puts
    # the installed copy ahead of the editable one, in this process and in the engine it starts.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    try:
        res = subprocess.run(
            [sys.executable, "-c", WRAPPER, "run"],
            cwd=elsewhere,
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
        )
    finally:
        shutil.rmtree(site, ignore_errors=True)
        shutil.rmtree(elsewhere, ignore_errors=True)
    probes = [ln for ln in res.stderr.splitlines() if ln.startswith(PROBE)]
    assert probes, f"no probe line (exit {res.returncode}):\n{res.stderr}"
    where = {k: Path(v).resolve() for k, v in json.loads(probes[0][len(PROBE) :]).items()}
    for what, path in where.items():
        assert path.is_relative_to(site.resolve()), f"{what} came from {path}, not the wheel"
        for checkout in (REPO / "src", REPO / "assets"):
            assert not path.is_relative_to(checkout), f"{what} came from the checkout: {path}"
    assert where["assets"] == site.resolve() / ASSETS_PACKAGE
    assert res.returncode == 0, res.stderr
    assert "-27.5" in res.stdout, res.stdout
