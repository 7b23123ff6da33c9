"""The GitHub Actions workflow (.github/workflows/ci.yml) runs what docs/install.md says it runs:
three systems, Python 3.11, the pinned CPU torch, Qt offscreen, the README's test command
unchanged, and the spawn model on Linux. Read as text: `make test` needs no YAML library and no
network. Its schema is checked with check-jsonschema (docs/install.md, "CI")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


@pytest.fixture(scope="module")
def text() -> str:
    return WORKFLOW.read_text(encoding="utf-8")


def test_three_systems_on_python_3_11(text: str) -> None:
    assert re.search(r"os: \[ubuntu-latest, macos-latest, windows-latest\]", text)
    assert text.count('python-version: "3.11"') == 2  # the matrix, and the spawn job


def test_torch_is_the_pinned_cpu_build_and_qt_draws_offscreen(text: str) -> None:
    assert "PIP_EXTRA_INDEX_URL: https://download.pytorch.org/whl/cpu" in text
    assert "QT_QPA_PLATFORM: offscreen" in text
    installs = re.findall(r"pip install .*", text)
    assert installs and all("-c constraints.txt" in line for line in installs)
    pinned = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==\d+\.\d+\.\d+$", pinned, re.M)  # the wheel the index serves


def test_linux_and_macos_run_the_readmes_command_and_linux_also_under_spawn(text: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make test    # set up, then lint" in readme
    assert text.count("run: make test PYTHON=python") == 2
    spawn_job = text[text.index("\n  spawn:") :]
    assert "DDP_VIZ_START_METHOD: spawn" in spawn_job and "runs-on: ubuntu-latest" in spawn_job


def test_windows_runs_the_same_checks_by_hand(text: str) -> None:
    for step in ("ruff check .", "ruff format --check .", "lint-imports", "pytest -n 3"):
        assert f".venv\\Scripts\\{step}" in text or f"python -m {step}" in text, step
