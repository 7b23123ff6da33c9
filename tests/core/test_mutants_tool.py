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
def run(tmp_path, monkeypatch):
    """tools/mutmut_run.py, its root the test's own folder (mutants.py imports it by name)."""
    monkeypatch.syspath_prepend(str(TOOL.parent))
    monkeypatch.delitem(sys.modules, "mutmut_run", raising=False)
    import mutmut_run

    monkeypatch.setattr(mutmut_run, "ROOT", tmp_path)
    monkeypatch.setattr(mutmut_run, "LOG", tmp_path / "mutants" / "run.log")
    return mutmut_run


@pytest.fixture
def tool(tmp_path, monkeypatch, run):
    spec = importlib.util.spec_from_file_location("mutants_tool", TOOL)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mutants_tool", mod)  # its dataclasses look it up
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    monkeypatch.setattr(mod, "SCORES", tmp_path / "scores.json")
    monkeypatch.setattr(mod, "EXCLUDED", tmp_path / "excluded.toml")
    monkeypatch.setattr(mod, "LOG", run.LOG)
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


def _stats(tmp_path: Path, names: list[str]) -> Path:
    stats = tmp_path / "mutants" / "mutmut-stats.json"
    stats.write_text(json.dumps({"tests_by_mangled_function_name": {n: ["t"] for n in names}}))
    (tmp_path / "tests").mkdir(exist_ok=True)
    return stats


def test_the_map_of_covering_tests_is_kept_only_when_it_holds_every_module_of_the_run(
    tool, run, tmp_path
):
    """A run scoped to one module after a run scoped to another found mutmut's map without
    the first module's functions, and every one of its mutants read "no tests"."""
    other = "src/ddp_viz/model/other.py"
    stats = _stats(tmp_path, ["ddp_viz.model.example.x_f", "ddp_viz.model.exampled.x_g"])
    (tmp_path / "mutants" / "tests.sha256").write_text(run.tests_digest())
    run.forget_stale_coverage([MODULE])
    assert stats.exists()  # every module of the run is mapped, the tests are unchanged
    run.forget_stale_coverage([MODULE, other])
    assert not stats.exists()
    _stats(tmp_path, ["ddp_viz.model.exampled.x_g"])  # another module whose name it begins
    assert run.mapped([MODULE]) is False


def test_a_map_of_no_functions_or_no_map_is_collected_again(tool, run, tmp_path):
    stats = _stats(tmp_path, [])
    (tmp_path / "mutants" / "tests.sha256").write_text(run.tests_digest())
    run.forget_stale_coverage([MODULE])
    assert not stats.exists()
    assert run.mapped([MODULE]) is False  # no file at all
    stats.write_text("{")
    assert run.mapped([MODULE]) is False


def _scored(tool, survived: list[str], total: int = 4):
    s = tool.Score(MODULE, killed=total - len(survived), total=total)
    s.survivors = [tool.Mutant(n, MODULE, "f", "survived", (), ()) for n in survived]
    return s


def test_a_mutant_killed_only_by_the_cpu_limit_that_passes_later_is_no_fall(tool, capsys):
    entry = {"score": 100.0, "killed": 4, "total": 4, "timed_out": ["m.x_f__mutmut_2"]}
    assert tool.fell(_scored(tool, ["m.x_f__mutmut_2"]), entry) is False
    assert "1 mutant(s) recorded as killed only by the CPU limit" in capsys.readouterr().out
    # any other survivor is a fall, and so is the timed-out one beside another
    assert tool.fell(_scored(tool, ["m.x_f__mutmut_3"]), entry) is True
    assert tool.fell(_scored(tool, ["m.x_f__mutmut_2", "m.x_f__mutmut_3"]), entry) is True
    # without the record's list, as before: a fall
    assert tool.fell(_scored(tool, ["m.x_f__mutmut_2"]), {**entry, "timed_out": []}) is True
    # the recorded share, not its rounded figure: 26 of 30 again is no fall
    same = {"score": 86.7, "killed": 26, "total": 30}
    assert tool.fell(_scored(tool, [f"n{i}" for i in range(4)], total=30), same) is False


def test_mutants_killed_by_the_cpu_limit_are_counted_killed_and_recorded_by_name(
    tool, tmp_path, monkeypatch
):
    codes = {"ddp_viz.model.example.x_f__mutmut_1": -24, "ddp_viz.model.example.x_f__mutmut_2": 1}
    _meta(tmp_path, json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "mutants" / MODULE).write_text(
        "def x_f__mutmut_orig():\n    return 1\n\ndef x_f__mutmut_1():\n    return 2\n\n"
        "def x_f__mutmut_2():\n    return 3\n"
    )
    s = tool.score(MODULE, [])
    assert (s.killed, s.total, s.timed_out) == (2, 2, ["ddp_viz.model.example.x_f__mutmut_1"])
    monkeypatch.setattr(tool, "covering_tests", lambda module: [])
    recorded: dict = {}
    tool.record_scores([s], recorded)
    assert recorded[MODULE]["timed_out"] == ["ddp_viz.model.example.x_f__mutmut_1"]
    # a module none of whose mutants timed out records no list
    tool.record_scores([tool.Score(MODULE, killed=2, total=2)], recorded)
    assert "timed_out" not in json.loads((tmp_path / "scores.json").read_text())[MODULE]
