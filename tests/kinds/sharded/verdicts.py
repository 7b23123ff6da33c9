"""DDP, DDP + ZeRO-1 and FSDP2 side by side: ZeRO's and FSDP's parameters and gradients equal
DDP's within their tolerances, and the bytes each rank holds match the formulas the stage
spells out. Four ranks; the stage shows rank 1's numbers."""

from tests.kinds.verdicts_base import Number, Said, Verdict, at, changed, event, last_step

RUN = "sharded-4-ranks.jsonl"

# the run's check in the report (every step) and in the status line
REPORT = Said(r"^✓ over 4 steps: full parameters of ZeRO and FSDP", r"^✗ over 4 steps")
STATUS = Said(r"; parameters (equal to|within \de-\d\d of) DDP's\.$", r"; ✗ ZeRO or FSDP past")


def diff(field: str, value: float):
    return lambda e: {field: value}


def plus_four(field: str):
    return lambda e: {field: getattr(e, field) + 4}


VERDICTS = [
    Verdict(
        "ZeRO-1's parameters equal DDP's within 1e-5",
        RUN,
        # the last rank, a middle step: above the tolerance, below a loosened 1e-4
        changed(event("sharded_step", way="zero", step=1, rank=3), diff("param_diff", 2e-5)),
        keeps=changed(event("sharded_step", way="zero", step=1, rank=3), diff("param_diff", 9e-6)),
        scene=Said(r"^✓ DDP \+ ZeRO-1", r"^✗ DDP \+ ZeRO-1: params within 2e-05", key="check.zero"),
        report=REPORT,
        status=STATUS,
        at=at(1, 3),
    ),
    Verdict(
        "FSDP2's gradient rows equal DDP's average within 1e-6",
        RUN,
        changed(event("sharded_step", way="fsdp", step=1, rank=3), diff("grad_diff", 2e-6)),
        keeps=changed(event("sharded_step", way="fsdp", step=1, rank=3), diff("grad_diff", 9e-7)),
        scene=Said(
            r"^✓ FSDP2: .*grads (exactly equal|within \de-0[7-9])$",
            r"^✗ FSDP2: .*grads within 2e-06",
            key="check.fsdp",
        ),
        report=REPORT,
        status=STATUS,
        at=at(1, 3),
    ),
    Verdict(
        "ZeRO-1's Adam state on the stage's rank matches the formula",
        RUN,
        changed(event("sharded_step", way="zero", step=3, rank=1), plus_four("state")),
        scene=Said(r"^✓ ", r"^✗", key="formula.zero"),
        report=Said(
            r"^DDP \+ ZeRO-1 +1 +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+$", r"^DDP \+ ZeRO-1 +1 .*✗ formula$"
        ),
        at=last_step(0),
        absent="the status line gives rank 0's totals, not the formula",
    ),
    Verdict(
        "FSDP2's parameter bytes on the last rank match the formula",
        RUN,
        changed(event("sharded_step", way="fsdp", step=3, rank=3), plus_four("params")),
        report=Said(r"^FSDP2 +3 +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+$", r"^FSDP2 +3 .*✗ formula$"),
        absent="the stage shows rank 1's bytes, the status line rank 0's totals",
    ),
]


# --- numbers: the ring line under the checks, for the stage's rank 1 ---------------------
STAGE_RANK = 1


def biggest_gather(events, step: int) -> int:
    """The largest all-gather rank 1 issued in FSDP2's step: the whole layer it gathered."""
    return max(
        e.bytes_out
        for e in events
        if e.kind == "sharded_collective"
        and (e.way, e.step, e.rank, e.op) == ("fsdp", step, STAGE_RANK, "all_gather")
    )


def ring_sends_kb(step: int):
    """A ring reduce-scatter and all-gather of B bytes each send (N−1)/N × B a rank."""

    def run(events) -> float:
        world = next(e for e in events if e.kind == "run_started").world_size
        return 2 * (world - 1) / world * biggest_gather(events, step) / 1e3

    return run


def more_gathered(step: int):
    """Rank 1's largest all-gather of the step, 4 kB larger."""

    def run(events):
        big = biggest_gather(events, step)
        return changed(
            lambda e: (
                e.kind == "sharded_collective"
                and (e.way, e.step, e.rank, e.op, e.bytes_out)
                == ("fsdp", step, STAGE_RANK, "all_gather", big)
            ),
            lambda e: {"bytes_out": e.bytes_out + 4000},
        )(events)

    return run


NUMBERS = [
    Number(
        "the ring's bytes a rank sends for FSDP2's reduce-scatter + all-gather",
        RUN,
        "check.ring",
        ring_sends_kb(2),
        at=at(2, 3),
        perturb=more_gathered(2),
        rel=2e-3,  # shown to a tenth of a kB
        pattern=r"send ([\d.]+) kB a rank",
    ),
    Number(
        "the layer the ring line is about: FSDP2's largest all-gather",
        RUN,
        "check.ring",
        lambda events: biggest_gather(events, 2) / 1e3,
        at=at(2, 3),
        perturb=more_gathered(2),
        rel=3e-3,
        pattern=r"RS \+ AG of ([\d.]+) kB",
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {"sharded": ("✓ over", "full parameters of ZeRO and FSDP within")}
