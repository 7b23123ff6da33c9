"""Quiz questions, grading and score. Pure model layer; content is TOML under assets/quiz/."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ddp_viz.model.assets import asset


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # "choice" | "predict"
    prompt: str
    explain: str
    choices: tuple[str, ...] = ()
    answer: int | None = None
    why_not: tuple[str, ...] = ()
    quantity: str = ""
    tolerance: float = 0.01


@dataclass(frozen=True)
class Feedback:
    correct: bool
    text: str


def load_quiz(name: str = "ddp-pattern.toml", folder: Path | None = None) -> list[Question]:
    data = tomllib.loads(((folder or asset("quiz")) / name).read_text(encoding="utf-8"))
    questions = []
    for raw in data.get("question", []):
        q = Question(
            id=raw["id"],
            kind=raw["kind"],
            prompt=raw["prompt"],
            explain=raw.get("explain", ""),
            choices=tuple(raw.get("choices", ())),
            answer=raw.get("answer"),
            why_not=tuple(raw.get("why_not", ())),
            quantity=raw.get("quantity", ""),
            tolerance=float(raw.get("tolerance", 0.01)),
        )
        if q.kind == "choice" and not (q.answer is not None and 0 <= q.answer < len(q.choices)):
            raise ValueError(f"quiz question {q.id}: answer must index one of its choices")
        if q.kind not in ("choice", "predict"):
            raise ValueError(f"quiz question {q.id}: unknown kind {q.kind!r}")
        questions.append(q)
    return questions


def grade_choice(q: Question, picked: int) -> Feedback:
    if picked == q.answer:
        return Feedback(True, f"Right. {q.explain}")
    why = q.why_not[picked] if picked < len(q.why_not) and q.why_not[picked] else ""
    return Feedback(False, f"Not quite. {why} {q.explain}".replace("  ", " ").strip())


def parse_prediction(text: str) -> float:
    """A learner's number; accepts a unicode minus. Raises ValueError with a readable message."""
    cleaned = text.strip().replace("−", "-").replace(",", ".")
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError("enter a finite number")
    return value


def grade_prediction(q: Question, predicted: float, actual: float) -> Feedback:
    """Compare with the value a real run produced (relative tolerance, at least 1e-3 absolute)."""
    ok = abs(predicted - actual) <= max(1e-3, q.tolerance * abs(actual))
    verdict = "Right" if ok else "Not quite"
    return Feedback(
        ok, f"{verdict}: you predicted {predicted:g}; the ranks computed {actual:g}. {q.explain}"
    )


@dataclass
class Score:
    answers: dict[str, bool] = field(default_factory=dict)

    def record(self, question_id: str, correct: bool) -> None:
        self.answers[question_id] = correct

    @property
    def correct(self) -> int:
        return sum(self.answers.values())

    @property
    def answered(self) -> int:
        return len(self.answers)

    def text(self, total: int) -> str:
        return f"Score: {self.correct} / {total} ({self.answered} answered)"
