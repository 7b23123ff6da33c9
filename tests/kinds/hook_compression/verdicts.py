"""Comm hooks: the stage shows numbers, not a ✓ or ✗: per hook the bytes rank 0 sent in the
step, the relative error of one layer's averaged gradient, and the step's loss (the mean of the
ranks'). Each is computed here from the raw ``hook_step`` events, at a step past PowerSGD's
warm-up (its bytes drop at step 11, from 1), and again after one rank's figure is changed."""

from tests.kinds.verdicts_base import Number, at, changed, event

RUN = "comm-hooks-14-steps.jsonl"
LAYER = "hidden.weight"  # the layer the lesson shows the error of


def hooks(events, variant: str, step: int):
    return [e for e in events if e.kind == "hook_step" and e.variant == variant and e.step == step]


def sent(variant: str, step: int, rank: int = 0):
    return lambda events: sum(next(e for e in hooks(events, variant, step) if e.rank == rank).sent)


def mean_loss(variant: str, step: int):
    def run(events) -> float:
        losses = [e.loss for e in hooks(events, variant, step)]
        return sum(losses) / len(losses)

    return run


def error(variant: str, step: int):
    return lambda events: next(e for e in hooks(events, variant, step) if e.rank == 0).errors[LAYER]


def four_more(e):
    return {"sent": [e.sent[0] + 4, *e.sent[1:]]}


NUMBERS = [
    Number(
        "bytes rank 0 sent with PowerSGD r=1, the first step past warm-up",
        RUN,
        "bytes.powersgd-r1",
        sent("powersgd-r1", 10),
        at=at(10, 0),
        perturb=changed(event("hook_step", variant="powersgd-r1", step=10, rank=0), four_more),
    ),
    Number(
        "bytes rank 0 sent with the default all-reduce",
        RUN,
        "bytes.allreduce",
        sent("allreduce", 12),
        at=at(12, 0),
        perturb=changed(event("hook_step", variant="allreduce", step=12, rank=0), four_more),
    ),
    Number(
        "the step's loss with PowerSGD r=4: the mean of the ranks'",
        RUN,
        "loss.powersgd-r4",
        mean_loss("powersgd-r4", 12),
        at=at(12, 3),
        # the last rank's loss moved: a column showing rank 0's would not follow
        perturb=changed(
            event("hook_step", variant="powersgd-r4", step=12, rank=1),
            lambda e: {"loss": e.loss + 0.5},
        ),
    ),
    Number(
        "the relative error of fp16's average",
        RUN,
        "error.fp16",
        error("fp16", 12),
        at=at(12, 1),
        perturb=changed(
            event("hook_step", variant="fp16", step=12, rank=0),
            lambda e: {"errors": {**e.errors, LAYER: e.errors[LAYER] * 2}},
        ),
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {"comm-hooks": ("after 12 steps", "PowerSGD r=1")}
# its default run is long for a test: the shorter run it takes there (12 steps show every event)
SHORTER = {"comm-hooks": ("steps = 200", "steps = 12")}
