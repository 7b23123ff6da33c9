"""Where the shipped content (lessons, scenarios, themes) lives.

The lecturer edits the top-level ``assets/`` folder of the repository. pyproject.toml maps it to
the data-only package ``ddp_viz_assets``, so it ships inside the wheel and an editable install
points straight at the repository folder (a new lesson shows up without reinstalling). The folder
is found through the import system, never by walking up from this file.

The package is a PEP 420 namespace package (``assets/`` holds no ``__init__.py``). On Python 3.11
``importlib.resources.files()`` cannot open one in an editable install: setuptools adds a
placeholder entry to its ``__path__`` and ``MultiplexedPath`` rejects it (and for a namespace
package it never returns a plain Path anyway). So the folder is read from the package's import
spec: the first of its locations that is a real directory, in import order.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

PACKAGE = "ddp_viz_assets"


def assets_dir() -> Path:
    """The content folder: the repository's assets/ (editable install) or the installed copy."""
    spec = find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise FileNotFoundError(
            f"ddp-viz content not found: the package {PACKAGE!r} (the assets/ folder) is not "
            "installed. Reinstall ddp-viz (`make setup`, or `pip install -e .` in the repository)."
        )
    for location in locations:
        path = Path(location)
        if path.is_dir():
            return path
    raise FileNotFoundError(
        f"ddp-viz content is not a folder on disk: {PACKAGE!r} resolves to {locations}. "
        "ddp-viz reads its lessons, scenarios and themes as files: install it unpacked "
        "(a normal `pip install`), not from a zip."
    )


def asset(*parts: str) -> Path:
    return assets_dir().joinpath(*parts)


def default_scenario_path() -> Path:
    return asset("lessons", "ddp-pattern", "scenario.toml")
