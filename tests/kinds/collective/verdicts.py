"""The all-reduce by hand: naive and ring equal ``dist.all_reduce`` bit for bit on every rank,
said per rank and algorithm in the report, and once on the stage and the status line."""

from tests.kinds.verdicts_base import Said, Verdict, changed, event, last_step, moved

RUN = "ring-4-ranks.jsonl"
# the verdict stands under the ring in the last step's all-reduce phase (its charts follow)
AT = last_step(2)

# the run's verdict, in the report's last line, on the stage and in the status line
REPORT = Said(r"^finished .*: ✓ naive and ring equal", r"^finished .*: ✗ a hand-made result")
SCENE = Said(r"^✓ .*equal to dist\.all_reduce", r"^✗ ", key="verdict")
STATUS = Said(r"✓ naive and ring equal dist.all_reduce on every rank", r"✗ a hand-made")


def row(rank: int, algo: str) -> Said:
    """The report's row of one rank and algorithm, and then the run's line."""
    return Said(
        rf"^\s*{rank}\s+{algo}\s.*✓$(?s:.*){REPORT.ok[1:]}",
        rf"^\s*{rank}\s+{algo}\s.*✗$(?s:.*){REPORT.bad[1:]}",
    )


def off_by_one(values):
    return [values[0] + 1.0, *values[1:]]


VERDICTS = [
    Verdict(
        "the ring equals dist.all_reduce on the last rank (the engine said not)",
        RUN,
        changed(event("collective_result", algo="ring", rank=3), lambda e: {"equal": False}),
        scene=SCENE,
        report=row(3, "ring"),
        status=STATUS,
        at=AT,
    ),
    Verdict(
        "naive equals dist.all_reduce on the last rank (its recorded sum one off)",
        RUN,
        changed(event("collective_result", algo="naive", rank=3), moved("values", off_by_one)),
        scene=SCENE,
        report=row(3, "naive"),
        status=STATUS,
        at=AT,
    ),
    Verdict(
        "the ring equals dist.all_reduce on the first rank (dist.all_reduce's sum one off)",
        RUN,
        changed(event("collective_result", algo="all_reduce", rank=0), moved("values", off_by_one)),
        scene=SCENE,
        report=row(0, "ring"),
        status=STATUS,
        at=AT,
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {"all-reduce": ("✓ naive and ring equal dist.all_reduce on every rank",)}
