"""Every verdict of every kind turns ✗ (pure: recorded events, no Qt, no torch).

Each registered kind declares in ``tests/kinds/<kind>/verdicts.py`` the ✓s its scene, report
and status line show (``VERDICTS``), each with a real recording on which it holds and a change
to that recording's events that must break it; and numbers its stage shows (``NUMBERS``), each
with its value computed here from the raw events. The suite reads what the stage and the text
*say*: a ✓ that stays ✓ on the broken recording, or a number that is not the recording's, fails.
"""

from __future__ import annotations

import importlib
import re
import sys
from types import ModuleType

import pytest

from ddp_viz.model import registry
from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.report import run_report
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import status_text
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import kind_ids, lesson_of
from tests.kinds.verdicts_base import Number, Said, Verdict, close


def declared(kind_id: str) -> ModuleType:
    return importlib.import_module(f"tests.kinds.{kind_id}.verdicts")


def _cases(what: str) -> list:
    out = []
    for kind_id in kind_ids():
        try:
            items = getattr(declared(kind_id), what, [])
        except ModuleNotFoundError:  # reported by the test below
            continue
        out += [pytest.param(kind_id, v, id=f"{kind_id}:{v.name}") for v in items]
    return out


def frame(kind_id: str, rec: RunRecord, v: Verdict | Number) -> StageFrame:
    lesson = lesson_of(kind_id)
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    return stage_frame(rec, v.at(rec), 1.0, ctx, lesson.scene)


def said_in(kind_id: str, rec: RunRecord, v: Verdict, where: str, said: Said) -> str:
    """The text the verdict is read from, its lines' breaks as spaces."""
    if where == "scene":
        f = frame(kind_id, rec, v)
        # the text of the verdict's key, every line of it (a long one wraps), else all of it
        keyed = [t.text for t in f.texts if t.key == said.key]
        text = "\n".join(keyed) if said.key else f.all_text()
    elif where == "report":
        text = (v.report_of or run_report)(rec)
        return text  # line by line: a pattern reads one line
    else:
        text = status_text(rec)
    return " ".join(text.split())


def reads(text: str, pattern: str) -> bool:
    return re.search(pattern, text, re.MULTILINE) is not None


@pytest.mark.parametrize(("kind_id", "v"), _cases("VERDICTS"))
def test_a_verdict_holds_on_its_recording_and_fails_on_its_perturbation(
    kind_id: str, v: Verdict
) -> None:
    events = load_recording(v.recording)
    if v.base is not None:
        events = v.base(list(events))
    broken = v.perturb(list(events))
    assert broken != events, "the perturbation changed nothing"
    sides = [("recorded", record(events), True), ("perturbed", record(broken), False)]
    if v.keeps is not None:
        kept = v.keeps(list(events))
        assert kept != events, "the change it keeps through changed nothing"
        sides.append(("changed within what it allows", record(kept), True))
    for side, rec, ok in sides:
        for where, said in v.places():
            text = said_in(kind_id, rec, v, where, said)
            assert reads(text, said.ok) is ok, f"{where}, {side}: {said.ok!r} in {text!r}"
            assert reads(text, said.bad) is not ok, f"{where}, {side}: {said.bad!r} in {text!r}"


@pytest.mark.parametrize(("kind_id", "n"), _cases("NUMBERS"))
def test_a_number_on_the_stage_is_the_recordings(kind_id: str, n: Number) -> None:
    events = load_recording(n.recording)
    sides = [events] + ([n.perturb(list(events))] if n.perturb is not None else [])
    shown = []
    for evs in sides:
        text = frame(kind_id, record(evs), n).text_with_key(n.key)
        assert text is not None, f"no text {n.key!r} on the stage"
        if n.pattern:
            found = re.search(n.pattern, text.text)
            assert found is not None, (n.pattern, text.text)
            got = float(found.group(1).replace(",", ""))
        else:
            assert text.value is not None, text
            got = text.value
        want = n.expected(evs)
        assert close(got, want, n.rel), f"{n.key}: shows {got} ({text.text!r}), recorded {want}"
        shown.append(got)
    if n.perturb is not None:
        assert shown[0] != shown[1], "the perturbation did not move the number"


@pytest.mark.parametrize("kind_id", kind_ids())
def test_every_kind_declares_its_verdicts(kind_id: str) -> None:
    """A kind's declarations exist, and each verdict is said somewhere (or says why not)."""
    module = declared(kind_id)
    verdicts, numbers = getattr(module, "VERDICTS", []), getattr(module, "NUMBERS", [])
    assert verdicts or numbers, f"{kind_id} declares no verdict and no number"
    for v in verdicts:
        assert v.places(), f"{v.name}: said nowhere"
        assert len(v.places()) == 3 or v.absent, f"{v.name}: where is it not said, and why?"


def test_a_kind_that_declares_nothing_fails_the_suite(monkeypatch) -> None:
    """The suite's own check can fail: a kind registered without a verdicts module, one whose
    module declares nothing, and one whose verdict is said in one place without saying why."""
    toy = "toy_without_verdicts"
    registry.register(registry.RunKind(id=toy, table=toy))
    try:
        with pytest.raises(ModuleNotFoundError):
            test_every_kind_declares_its_verdicts(toy)
        module = ModuleType(f"tests.kinds.{toy}.verdicts")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        with pytest.raises(AssertionError, match="declares no verdict"):
            test_every_kind_declares_its_verdicts(toy)
        module.VERDICTS = [Verdict("toy", "default-run.jsonl", list, scene=Said("✓", "✗"))]
        with pytest.raises(AssertionError, match="why"):
            test_every_kind_declares_its_verdicts(toy)
    finally:
        registry.unregister(toy)
