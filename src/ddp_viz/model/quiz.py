"""Quiz questions, grading and score. Pure model layer; questions live in each lesson.toml.

A ``predict`` question names a :class:`Quantity` of the learner's next run; the window locks the
guess before Run and grades it when the stage reaches the phase that reveals the quantity, so
the learner predicts first and watches second. Only the first answer to a question scores.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ddp_viz.model import registry
from ddp_viz.model.field_labels import choice_label, field_label
from ddp_viz.model.tensors import close, tensor_sample
from ddp_viz.model.timeline import RunRecord

# what a quantity is -> the stage phase that reveals it
# ("buckets": how many buckets DDP all-reduced in that step; the buckets scene shows the layout
# in the step's first phase)
REVEALED_IN = {
    "loss": "local",
    "local": "local",
    "averaged": "allreduce",
    "params": "step",
    "buckets": "shards",
    "rows": "local",  # how many rows the rank trained on in that step
    # how many steps every rank completed, once the run is over (a reducer error stops it)
    "steps_done": "step",
}
NO_PARAM = ("loss", "buckets", "rows", "steps_done")
AT_END = ("steps_done",)  # known once the run is over: shown where the stage ends
# what a core quantity counts, for the prediction field's placeholder (a count is no -12.5)
COUNTS = {
    "buckets": "a number of buckets",
    "rows": "a number of rows",
    "steps_done": "a number of steps",
}


def _source(what: str) -> registry.QuantitySource | None:
    """A quantity a kind of run adds (the kinds' own, beside the core's above)."""
    return next((k.quantities[what] for k in registry.kinds() if what in k.quantities), None)


def revealed_in(what: str) -> str | None:
    """The stage phase that shows ``what``, or None for no known quantity."""
    source = _source(what)
    return source.phase if source is not None else REVEALED_IN.get(what)


def _setting(scenario: Mapping[str, Any], path: str) -> Any:
    found: Any = scenario
    for part in path.split("."):
        found = found.get(part) if isinstance(found, Mapping) else None
    return found


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return close(a, b, 1e-12)
    return a == b


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return f'"{value}"' if isinstance(value, str) else str(value)


def _name(key: str) -> str:
    """A setting as the form labels it (its last key for one the form does not show)."""
    return field_label(key, unnamed=key.split(".")[-1])


def _said(key: str, value: Any) -> str:
    """``Micro-batches = 3``, ``no_sync() = backward only``: what the learner sets, in the
    form's words, not the scenario file's keys and values."""
    return f"{_name(key)} = {choice_label(key, value) or _shown(value)}"


@dataclass(frozen=True)
class Quantity:
    """One recorded number: ``what`` of parameter ``param`` (element ``index``) at ``step``
    (1-based, as every view counts steps) on ``rank``, in a run of ``world_size`` ranks (any
    world size when None) and, when set, with ``bucket_cap_mb`` and the scenario settings in
    ``when`` (dotted keys: ``("train.no_sync", "backward_only")``)."""

    what: str = "averaged"
    param: str = ""
    step: int = 1
    rank: int = 0
    index: int = 0
    world_size: int | None = None
    bucket_cap_mb: float | None = None
    when: tuple[tuple[str, Any], ...] = ()

    def settings(self) -> tuple[tuple[str, Any], ...]:
        cap = () if self.bucket_cap_mb is None else (("ddp.bucket_cap_mb", self.bucket_cap_mb),)
        return cap + self.when

    def matches(self, record: RunRecord) -> bool:
        """Is ``record`` a run this quantity is about?"""
        if self.world_size is not None and record.world_size != self.world_size:
            return False
        return all(_same(_setting(record.scenario, k), v) for k, v in self.settings())

    def conditions(self) -> str:
        """`` with 4 ranks``, `` with Bucket (MiB) = 0.25``, both, or nothing."""
        parts = []
        if self.world_size is not None:
            parts.append(f"{self.world_size} ranks")
        parts += [_said(k, v) for k, v in self.settings()]
        return (" with " + " and ".join(parts)) if parts else ""

    def mismatch(self, record: RunRecord) -> str:
        """What about ``record`` differs from the run this quantity is about."""
        out = []
        if self.world_size is not None and record.world_size != self.world_size:
            out.append(f"{record.world_size} ranks")
        for key, wanted in self.settings():
            have = _setting(record.scenario, key)
            if not _same(have, wanted):
                out.append(_said(key, have) if have is not None else f"no {_name(key)}")
        return " and ".join(out)

    @property
    def phase(self) -> str:
        return revealed_in(self.what) or "step"

    def reveal_step(self, record: RunRecord) -> int:
        """The step (from 0) whose ``phase`` shows the value: ``step``'s, or for a value that
        only the run's end says (the steps DDP allowed, the rank a tool named) the last step
        the stage can show, where its scene says it."""
        source = _source(self.what)
        at_end = source.at_end if source is not None else self.what in AT_END
        return max(0, record.complete_prefix() - 1) if at_end else self.step - 1

    def read(self, record: RunRecord) -> float | None:
        """The value the run recorded, or None while it has not arrived."""
        source = _source(self.what)
        if source is not None:
            return source.read(record, self) if record.run is not None else None
        if self.what == "steps_done":
            return float(record.complete_prefix()) if record.done else None
        i = self.step - 1
        if not 0 <= i < len(record.steps):
            return None
        rs = record.steps[i].ranks.get(self.rank)
        if rs is None:
            return None
        if self.what == "loss":
            return rs.loss
        if self.what == "buckets":
            return float(len(rs.bucket_spans)) if rs.bucket_spans else None
        if self.what == "rows":
            return float(len(rs.rows)) if rs.loss is not None else None
        tensors = {"local": rs.local, "averaged": rs.averaged, "params": rs.params}[self.what]
        if tensors is None or self.param not in tensors:
            return None
        values = tensor_sample(tensors[self.param])  # a big tensor: its first 8 values
        return values[self.index] if self.index < len(values) else None


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # "choice" | "predict"
    prompt: str
    explain: str
    choices: tuple[str, ...] = ()
    answer: int | None = None
    why_not: tuple[str, ...] = ()
    quantity: Quantity | None = None
    tolerance: float = 0.01


@dataclass(frozen=True)
class Feedback:
    correct: bool
    text: str


def _quantity(qid: str, raw: Any) -> Quantity:
    if not isinstance(raw, Mapping):
        raise ValueError(f"question {qid}: predict questions need a [question.quantity] table")
    keys = ("what", "param", "step", "rank", "index", "world_size", "bucket_cap_mb")
    when = raw.get("when", {})
    if not isinstance(when, Mapping):
        raise ValueError(f"question {qid}: quantity.when is a table of scenario settings")
    q = Quantity(**{k: raw[k] for k in keys if k in raw}, when=tuple(when.items()))
    if revealed_in(q.what) is None:
        known = [*REVEALED_IN, *(w for k in registry.kinds() for w in k.quantities)]
        raise ValueError(f"question {qid}: quantity.what must be one of {', '.join(known)}")
    source = _source(q.what)
    needs_param = source.needs_param if source is not None else q.what not in NO_PARAM
    if needs_param and not q.param:
        raise ValueError(f"question {qid}: quantity.param names the parameter")
    if q.step < 1:
        raise ValueError(f"question {qid}: quantity.step counts from 1")
    return q


def parse_questions(raws: Sequence[Mapping[str, Any]]) -> list[Question]:
    questions = []
    for raw in raws:
        kind = raw.get("kind")
        qid = raw.get("id", "?")
        if kind not in ("choice", "predict"):
            raise ValueError(f"question {qid}: unknown kind {kind!r}")
        q = Question(
            id=raw["id"],
            kind=kind,
            prompt=raw["prompt"],
            explain=raw.get("explain", ""),
            choices=tuple(raw.get("choices", ())),
            answer=raw.get("answer"),
            why_not=tuple(raw.get("why_not", ())),
            quantity=_quantity(qid, raw.get("quantity")) if kind == "predict" else None,
            tolerance=float(raw.get("tolerance", 0.01)),
        )
        if kind == "choice" and not (q.answer is not None and 0 <= q.answer < len(q.choices)):
            raise ValueError(f"question {q.id}: answer must index one of its choices")
        questions.append(q)
    return questions


def display_order(q: Question, learner: str) -> tuple[int, ...]:
    """The order to show ``q``'s choices in: displayed position -> index in ``q.choices``.

    Written order gives the answer away (authors put it first, or last), so each learner sees
    a shuffle seeded by their own ``learner`` value (one per installation) and the question's
    id: another learner sees another order, and the same learner the same one on every retry
    and every restart, so a position they remember stays where it was. Grading never reads
    the displayed position, only the index this maps it to.
    """
    digest = hashlib.sha256(f"{learner}\x00{q.id}".encode()).digest()
    order = list(range(len(q.choices)))
    random.Random(digest).shuffle(order)
    return tuple(order)


def grade_choice(q: Question, picked: int) -> Feedback:
    if picked == q.answer:
        return Feedback(True, f"Right. {q.explain}")
    why = q.why_not[picked] if picked < len(q.why_not) and q.why_not[picked] else ""
    return Feedback(False, f"Not quite. {why} {q.explain}".replace("  ", " ").strip())


def placeholder_for(q: Question) -> str:
    """What the prediction field shows while empty: the kind of number the question asks
    for (a count of bytes or rows is whole and positive; a gradient may be -12.5)."""
    what = q.quantity.what if q.quantity is not None else ""
    source = _source(what)
    unit = source.unit if source is not None else COUNTS.get(what, "")
    return f"your prediction: {unit}" if unit else "your prediction, e.g. -12.5"


def parse_prediction(text: str) -> float:
    """A learner's number; accepts a unicode minus and a decimal comma."""
    cleaned = text.strip().replace("−", "-").replace(",", ".")
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError("enter a finite number")
    return value


def prediction_is_right(q: Question, predicted: float, actual: float) -> bool:
    """Within the question's relative tolerance of the real value (at least 1e-3 absolute),
    on either side."""
    return abs(predicted - actual) <= max(1e-3, q.tolerance * abs(actual))


def grade_prediction(q: Question, predicted: float, actual: float) -> Feedback:
    ok = prediction_is_right(q, predicted, actual)
    verdict = "Right" if ok else "Not quite"
    return Feedback(
        ok, f"{verdict}: you predicted {predicted:g}; the ranks computed {actual:.6g}. {q.explain}"
    )


@dataclass
class Score:
    """First answers only: a wrong first try that is corrected later still counts as wrong."""

    first: dict[str, bool] = field(default_factory=dict)
    latest: dict[str, bool] = field(default_factory=dict)

    def record(self, question_id: str, correct: bool) -> None:
        self.first.setdefault(question_id, correct)
        self.latest[question_id] = correct

    def record_practice(self, question_id: str, correct: bool) -> None:
        """An answer given after the answer was seen: it counts toward passing, not the score."""
        self.latest[question_id] = correct

    @property
    def correct(self) -> int:
        return sum(self.first.values())

    @property
    def answered(self) -> int:
        return len(self.first)

    def passed(self, total: int) -> bool:
        """Every question answered right at least once (the course marks the lesson done)."""
        return total > 0 and len(self.latest) == total and all(self.latest.values())

    def text(self, total: int) -> str:
        return f"Score: {self.correct} / {total} first answers right ({self.answered} answered)"
