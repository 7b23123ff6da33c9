"""Evaluating under DDP: which of four ways to compute an accuracy equals one process's on
every held-out row; whether every rank got the same all-reduced numbers; rank 0 alone through
``model.module``; and what seeding does to the dropout masks and the weights."""

from tests.kinds.verdicts_base import Said, Verdict, at, changed, event, moved

RUN = "evaluation-4-ranks.jsonl"


def one_off(pair):
    return [pair[0] + 1.0, *pair[1:]]


def one_place_flipped(mask):
    return [[1 - mask[0][0], *mask[0][1:]], *mask[1:]]


VERDICTS = [
    Verdict(
        "all-reduced sums, padding dropped = one process",
        RUN,
        changed(event("eval_numbers", rank=0), moved("kept_sums", one_off)),
        scene=Said(r"^= reference$", r"^≠ reference$", key="equal.kept"),
        report=Said(
            r"^all-reduced sums, padding dropped +0\.8400 += reference$",
            r"^all-reduced sums, padding dropped +0\.\d+ +≠ reference$",
        ),
        status=Said(r"finished: 1 of 4 ways equal", r"finished: 0 of 4 ways equal"),
        at=at(0, 1),
    ),
    Verdict(
        "every rank got the same all-reduced numbers",
        RUN,
        changed(event("eval_numbers", rank=3), moved("kept_sums", one_off)),
        report=Said(r"^✓ every rank got the same", r"^✗ every rank got the same"),
        absent="the stage and the status line show rank 0's numbers; the report checks the rest",
    ),
    Verdict(
        "rank 0 alone through model.module = one process",
        RUN,
        changed(event("eval_outcome", attempt="module", rank=0), lambda e: {"accuracy": 0.8}),
        scene=Said(
            r"accuracy 0\.8400 on every row = one process$",
            r"accuracy 0\.8000 on every row ≠ one process$",
            key="module.accuracy",
        ),
        report=Said(r"model\.module: completed, accuracy 0\.8400$", r"accuracy 0\.8000$"),
        at=at(0, 2),
        absent="the report gives the accuracy (above it, the reference's); the status, not it",
    ),
    Verdict(
        "manual_seed(seed): the same dropout mask on every rank",
        RUN,
        changed(event("dropout_mask", seeding="same", rank=3), moved("mask", one_place_flipped)),
        scene=Said(r"mask: 100%, 100%, 100%$", r"mask: 100%, 100%, \d\d%$", key="agree.same"),
        report=Said(r"manual_seed\(seed\): .*rank 3 100%$", r"manual_seed\(seed\): .*rank 3 9\d%$"),
        at=at(0, 3),
        absent="the status line says how the run ended, not the seeds",
    ),
    Verdict(
        "seed + rank: DDP keeps the same weights on every rank",
        RUN,
        changed(
            event("dropout_mask", seeding="seed_plus_rank", rank=3),
            lambda e: {"weights": "00000000"},
        ),
        scene=Said(r"the same CRC-32 on every rank", r"2 different CRC-32s", key="weights"),
        report=Said(r"seed \+ rank: 1 distinct CRC-32", r"seed \+ rank: 2 distinct CRC-32"),
        at=at(0, 3),
        absent="the status line says how the run ended, not the seeds",
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {"evaluation": ("padding dropped", "Timed out")}  # and rank 0's wait
