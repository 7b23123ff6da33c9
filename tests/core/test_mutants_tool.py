"""tools/mutants.py when mutmut is stopped at CI's budget: a results file it was rewriting
when the budget ran out is read as "not rechecked", never as a crash of the ratchet."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

# it loads tools/mutants.py from the checkout, which a mutation run's copy of tests/ lacks
pytestmark = pytest.mark.source

TOOL = Path(__file__).resolve().parents[2] / "tools" / "mutants.py"
MODULE = "src/ddp_viz/model/example.py"
WHOLE = {"exit_code_by_key": {"ddp_viz.model.example.x_f__mutmut_1": 1}}


@pytest.fixture
def tool(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("mutants_tool", TOOL)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutants_tool", mod)  # its dataclasses look it up
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    monkeypatch.setattr(mod, "SCORES", tmp_path / "scores.json")
    monkeypatch.setattr(mod, "EXCLUDED", tmp_path / "excluded.toml")
    monkeypatch.setattr(mod, "LOG", tmp_path / "mutants" / "run.log")
    monkeypatch.setattr(mod, "choose", lambda paths, recorded: [MODULE])
    monkeypatch.setattr(mod, "listed_modules", lambda: [MODULE])
    (tmp_path / "scores.json").write_text(
        json.dumps({MODULE: {"score": 100.0, "killed": 1, "total": 1, "fingerprint": "x"}})
    )
    mutated = tmp_path / "mutants" / MODULE
    mutated.parent.mkdir(parents=True)
    mutated.write_text(
        "def x_f__mutmut_orig():\n    return 1\n\ndef x_f__mutmut_1():\n    return 2\n"
    )
    return mod


def _meta(tmp_path: Path, text: str) -> None:
    (tmp_path / "mutants" / f"{MODULE}.meta").write_text(text)


def _finish(tool, monkeypatch, in_time: bool) -> None:
    monkeypatch.setattr(tool, "run_mutmut", lambda modules, jobs, budget: in_time)


def test_a_results_file_cut_short_by_the_budget_counts_as_not_rechecked(
    tool, tmp_path, monkeypatch, capsys
):
    _meta(tmp_path, json.dumps(WHOLE, indent=1)[:40])
    _finish(tool, monkeypatch, in_time=False)
    assert tool.main(["--quiet", "--budget", "1"]) == 0
    out = capsys.readouterr().out
    assert f"not rechecked in the budget: {MODULE} (its results were cut short)" in out


def test_a_whole_results_file_is_still_scored_after_the_budget(tool, tmp_path, monkeypatch, capsys):
    _meta(tmp_path, json.dumps(WHOLE))
    _finish(tool, monkeypatch, in_time=False)
    assert tool.main(["--quiet", "--budget", "1"]) == 0
    assert "100.0%     1/1    src/ddp_viz/model/example.py" in capsys.readouterr().out


def test_a_results_file_that_does_not_parse_after_a_finished_run_is_an_error(
    tool, tmp_path, monkeypatch
):
    _meta(tmp_path, "{")
    _finish(tool, monkeypatch, in_time=True)
    with pytest.raises(SystemExit) as stop:
        tool.main(["--quiet"])
    assert "mutmut's results do not parse" in str(stop.value)
    assert f"mutants/{MODULE}.meta" in str(stop.value)
