"""What the restart lesson says of ZeRO's state holds for the installed torch: read from its
source as text (no torch import), beside the lesson's words."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from ddp_viz.model.course import load_course

LESSON = load_course().get("when-a-rank-dies")
ZERO = Path(find_spec("torch").origin).parent / "distributed/optim/zero_redundancy_optimizer.py"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def test_only_the_rank_consolidated_on_may_call_state_dict() -> None:
    source = ZERO.read_text(encoding="utf-8")
    refusal = '"Optimizer state has not been consolidated on this rank. "'
    assert "if len(self._all_state_dicts) == 0:\n            raise RuntimeError(" in source
    assert refusal in source
    # gathered on `to` alone, one broadcast from each rank: a collective every rank calls
    assert (
        "if self.rank == to:" in source
        and ".. warning:: This needs to be called on all ranks." in source
    )
    text = _one_line(LESSON.markdown)
    assert "on any other rank it raises a `RuntimeError`" in text
    assert "Every rank must make the call, even those that save nothing" in text
    question = next(q for q in LESSON.questions if q.id == "zero-state-dict")
    assert "RuntimeError" in question.choices[question.answer]


def test_loading_keeps_each_rank_s_own_part_and_zero_splits_by_parameter() -> None:
    source = ZERO.read_text(encoding="utf-8")
    assert (
        "if self._param_to_rank[param] != self.rank:\n                # Clear any state" in source
    )
    assert "params_sorted = sorted(\n" in source and "rank = self._get_min_index(sizes)" in source
    text = _one_line(LESSON.markdown)
    assert "each rank keeps its own part" in text
    assert "ZeRO splits by parameter, not by element" in text
