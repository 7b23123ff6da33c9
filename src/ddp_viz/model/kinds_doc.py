"""The kinds of run as docs/lessons.md lists them, made from the registry (pure).

``ddp-viz check --kinds`` prints it and a test holds the docs' copy to it, so a new kind is
listed by registering it: its scenes say what they draw in their builder's docstring, its
quiz quantities in their reader's.
"""

from __future__ import annotations

from collections.abc import Callable

from ddp_viz.model import registry
from ddp_viz.model.quiz import COUNTS, REVEALED_IN

# what each of the core's quantities (model/quiz.py) is, for a prediction's `what`
CORE_QUANTITIES = {
    "loss": "the rank's loss in that step",
    "local": "a value of the rank's local gradient of `param`, before the all-reduce",
    "averaged": "a value of `param`'s gradient after the all-reduce",
    "params": "a value of `param` after the step",
    "buckets": "how many buckets DDP all-reduced in that step",
    "rows": "how many rows the rank trained on in that step",
    "steps_done": "how many steps every rank completed, once the run is over",
}


def first_sentence(fn: Callable[..., object]) -> str:
    """The docstring's first sentence, on one line, without a "A prediction's number:"."""
    text = " ".join((fn.__doc__ or "").split()).replace("``", "`")
    text = text.removeprefix("A prediction's number: ")
    end = text.find(". ")
    text = text if end < 0 else text[: end + 1]
    return text[:1].upper() + text[1:] if text else ""


def _what(kind: registry.RunKind) -> str:
    if kind.table is not None:
        return f"a run whose scenario has `[{kind.table}]`"
    if kind.default:
        return "DDP training, the default the other kinds add to"
    if kind.every_run:
        return "a part of every run"
    return "a run its scenario claims"


def kinds_markdown() -> str:
    """One item per kind: what makes a run one, its scenes and its quiz quantities."""
    lines = ["The core's quiz quantities (`what` in `[question.quantity]`):", ""]
    for name, words in CORE_QUANTITIES.items():
        unit = f" ({COUNTS[name]})" if name in COUNTS else ""
        lines.append(f"- `{name}`{unit}: {words}; shown in phase `{REVEALED_IN[name]}`")
    lines += ["", "The kinds (`kind` in lesson.toml; `scene` names one of their scenes):", ""]
    for kind in sorted(registry.kinds(), key=lambda k: k.id):
        lines.append(f"- **`{kind.id}`**: {_what(kind)}.")
        for name, build in kind.scenes.items():
            lines.append(f"  - scene `{name}`: {first_sentence(build) or '(undocumented)'}")
        for name, q in kind.quantities.items():
            unit = f" ({q.unit})" if q.unit else ""
            said = first_sentence(q.read) or "(undocumented)"
            lines.append(f"  - quantity `{name}`{unit}: {said} Shown in phase `{q.phase}`.")
    return "\n".join(lines) + "\n"
