"""Every recording's report and status line, word for word, against a reviewed copy.

The numbers in these texts are checked against the raw events by the tests beside each kind;
this test holds the rest of what a user reads: the wording, the ✓ and ✗, which rank and step a
line names, the order of the lines. A change to any of them shows here as a diff to review.
After a deliberate change, write the new texts with ``DDP_VIZ_WRITE_REPORTS=1`` and read the
diff (``git diff tests/data/reports``) before committing it: a copy nobody read holds nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ddp_viz.kinds.watched.checks import findings, verdict
from ddp_viz.kinds.watched.run import is_watched
from ddp_viz.model.report import run_report
from ddp_viz.model.run_status import playing_text, status_text
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording

DATA = Path(__file__).parents[1] / "data"
TEXTS = DATA / "reports"
RECORDINGS = sorted(p.name for p in DATA.glob("*.jsonl"))


def report(rec: RunRecord) -> str:
    """What the terminal says at the end: ``ddp-viz run``'s report, or for a watched run the
    doctor's findings and its verdict, as ``ddp-viz watch`` prints them."""
    if not is_watched(rec):
        return run_report(rec)
    lines = [line for _, said in findings(rec) for line in said]
    return "\n".join([*lines, verdict(rec)])


def said(name: str) -> str:
    rec = record(load_recording(DATA / name))
    return "\n".join(
        [
            "--- report",
            report(rec),
            "--- status line",
            status_text(rec),
            "--- status line while the stage plays the run",
            playing_text(rec),
            "",
        ]
    )


@pytest.mark.parametrize("name", RECORDINGS)
def test_a_recordings_report_says_what_was_reviewed(name: str) -> None:
    text, kept = said(name), TEXTS / f"{Path(name).stem}.txt"
    if os.environ.get("DDP_VIZ_WRITE_REPORTS"):
        kept.write_text(text, "utf-8")
    assert kept.exists(), f"no reviewed text for {name}: write it with DDP_VIZ_WRITE_REPORTS=1"
    assert text == kept.read_text("utf-8")


def test_every_kept_text_has_its_recording() -> None:
    stems = {Path(n).stem for n in RECORDINGS}
    assert sorted(p.stem for p in TEXTS.glob("*.txt") if p.stem not in stems) == []
