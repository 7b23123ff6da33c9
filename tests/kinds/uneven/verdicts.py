"""Uneven inputs under Join: after the loop every rank holds the same parameters, and they
equal one float64 process's on the same rows within 1e-6. Two ranks; rank 1 finishes last."""

from tests.kinds.verdicts_base import Said, Verdict, changed, event, nudged

RUN = "uneven-join.jsonl"

VERDICTS = [
    Verdict(
        "the same parameters on every rank after the loop",
        RUN,
        changed(event("final_params", rank=1), nudged("params", 3e-6)),
        scene=Said(r"· ✓ the same on every rank", r"· ✗ the ranks differ", key="final"),
        report=Said(
            r"^after the loop: ✓ the same parameters on every rank$",
            r"^after the loop: ✗ the ranks' parameters differ$",
        ),
        absent="the status line's ✓ ranks agree is each step's check, made before Join's end",
    ),
    Verdict(
        "equal to one float64 process within 1e-6",
        RUN,
        # above the tolerance, below a loosened 1e-5
        changed(
            lambda e: e.kind == "final_params" and e.one_process is not None,
            nudged("one_process", 2e-6),
        ),
        keeps=changed(
            lambda e: e.kind == "final_params" and e.one_process is not None,
            nudged("one_process", 4e-7),
        ),
        scene=Said(r"· ✓ equal", r"· ✗ differs by", key="one_process"),
        report=Said(
            r"\(✓ largest difference [\d.e-]+, tolerance 1e-06\)$",
            r"\(✗ largest difference [\d.e-]+, tolerance 1e-06\)$",
        ),
        absent="the status line says how the run ended, not the one-process check",
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {"uneven-inputs": ("then gloo said:", "Timed out")}  # the stall is its outcome
