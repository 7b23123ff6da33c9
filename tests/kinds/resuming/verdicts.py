"""When a rank dies: whether every rank loaded rank 0's checkpoint; whether a resume with
everything restored ends on the run never stopped's weights bit for bit (on every rank), and
one without the epoch does not; whether torchrun's restarted run ends on them too. Numbers:
the checkpoint's bytes, the mask places that differ, Adam's step, the steps lost, the
restarts."""

from tests.kinds.verdicts_base import Number, Said, Verdict, at, both, changed, event, every

RUN = "resuming-2-ranks.jsonl"
FOUR = "resuming-4-ranks.jsonl"  # its resume of everything ends 1.5e-08 away: DDP's bucket
LAST = 1  # the recording's last rank


def _of(events, kind, **fields):
    return [
        e for e in events if e.kind == kind and all(getattr(e, k) == v for k, v in fields.items())
    ]


def steps_lost(events) -> float:
    """From the workers' own attempts: the step the killed rank died after, less the step
    the last attempt resumed from."""
    attempts = _of(events, "restart_attempt")
    killed = next(a for a in attempts if a.end == "killed")
    last = max(a.attempt for a in attempts)
    resumed = min(a.start_step for a in attempts if a.attempt == last)
    return float(killed.last_step - resumed)


VERDICTS = [
    Verdict(
        "every rank loaded the weights rank 0 saved",
        RUN,
        changed(event("checkpoint_loaded", rank=LAST), lambda e: {"weights": "00000000"}),
        scene=Said(r"^✓ every rank loaded", r"^✗ every rank loaded", key="loads"),
        report=Said(r"^✓ every rank loaded rank 0's weights", r"^✗ every rank loaded"),
        at=at(0, 0),
        absent="the status line says how the resumes and the restart ended, not the loads",
    ),
    Verdict(
        "the last rank's own load: its weights against rank 0's",
        RUN,
        changed(event("checkpoint_loaded", rank=LAST), lambda e: {"weights": "00000000"}),
        scene=Said(r"c28ecf47 = rank 0's$", r"00000000 ≠ rank 0's$", key=f"load.{LAST}"),
        report=Said(r"rank 1 c28ecf47$", r"rank 1 00000000$"),
        at=at(0, 0),
        absent="the status line says how the resumes and the restart ended, not the loads",
    ),
    Verdict(
        "everything restored: bit for bit on every rank",
        RUN,
        changed(
            event("resume_compared", variant="everything", rank=LAST),
            lambda e: {"max_diff": 1e-9},
        ),
        scene=Said(r"^✓ bit for bit$", r"^✗ largest \|Δ\| 1\.0e-09$", key="variant.everything"),
        report=Said(r"^✓ everything restored +bit for bit", r"^✗ everything restored +largest"),
        status=Said(r"finished: 1 of 4 resumes bit-equal", r"finished: 0 of 4 resumes"),
        at=at(0, 1),
    ),
    Verdict(
        "everything restored: the last rank's own weights",
        RUN,
        changed(
            event("resume_compared", variant="everything", rank=LAST),
            lambda e: {"weights": "00000000"},
        ),
        scene=Said(r"^=$", r"^≠$", key=f"cell.everything.{LAST}"),
        report=Said(r"2 of 2 ranks equal; rows, masks", r"1 of 2 ranks equal; rows, masks"),
        status=Said(r"finished: 1 of 4 resumes bit-equal", r"finished: 0 of 4 resumes"),
        at=at(0, 1),
    ),
    Verdict(
        "the epoch left out: the weights differ",
        RUN,
        every(
            event("resume_compared", variant="no_epoch"),
            lambda e: {"max_diff": 0.0, "weights": e.weights_want},
        ),
        scene=Said(r"^✗ largest", r"^✓ bit for bit$", key="variant.no_epoch"),
        report=Said(r"^✗ sampler's epoch left out", r"^✓ sampler's epoch left out"),
        status=Said(r"finished: 1 of 4 resumes", r"finished: 2 of 4 resumes"),
        at=at(0, 1),
    ),
    Verdict(
        "torchrun's restarted run ends on the run never stopped's weights",
        RUN,
        changed(event("restart_outcome"), lambda e: {"max_diff": 1e-9}),
        scene=Said(r"^✓ final weights = ", r"^✗ final weights ≠", key="final"),
        report=Said(r"^✓ final weights equal", r"^✗ final weights differ"),
        status=Said(r"final weights equal to the run", r"final weights different from"),
        at=at(0, 3),
    ),
    Verdict(
        "torchrun's final weights: the CRC-32s agree",
        RUN,
        changed(event("restart_outcome"), lambda e: {"weights": "00000000"}),
        scene=Said(r"^✓ final weights = ", r"^✗ final weights ≠", key="final"),
        report=Said(r"^✓ final weights equal", r"^✗ final weights differ"),
        status=Said(r"final weights equal to the run", r"final weights different from"),
        at=at(0, 3),
    ),
]

VERDICTS.append(
    Verdict(
        "FSDP2's state saved at 2 ranks with DCP, loaded at 1: parameters equal",
        RUN,
        changed(event("reshard_compared", rank=0), lambda e: {"max_diff": 1e-9}),
        scene=Said(r"^✓ (FSDP2|DCP)", r"^✗ (FSDP2|DCP)", key="reshard"),
        report=Said(
            r"^✓ parameters loaded at 1 = saved at 2, bit for bit", r"^✗ parameters loaded at 1"
        ),
        at=at(0, 0),
        absent="the status line counts the resumes and the restarts",
    )
)
VERDICTS.append(
    Verdict(
        "everything at 4 ranks: the first resumed step matched, the bucket order moved the bits",
        FOUR,
        changed(event("resume_compared", variant="everything", rank=3), lambda e: {"mask_diff": 1}),
        scene=Said(
            r"^everything: first step alike", r"first resumed step differs", key="why.everything"
        ),
        report=Said(
            r"^✗ everything restored .*as never stopped; a new DDP's first bucket",
            r"^✗ everything restored .*the first resumed step differs",
        ),
        at=at(0, 1),
        absent="the status line counts the resumes that are bit-equal, not why",
    )
)

ZERO_OK = (r"^✓ ZeRO", r"^✗ ZeRO")
VERDICTS += [
    Verdict(
        "ZeRO: the state rank 0 gathered equals plain Adam's",
        RUN,
        changed(event("zero_consolidated", rank=0), lambda e: {"state_diff": 1e-9}),
        scene=Said(*ZERO_OK, key="zero"),
        report=Said(r"^✓ consolidate_state_dict\(to=0\)", r"^✗ consolidate_state_dict.*≠ plain"),
        at=at(0, 0),
        absent="the status line counts the resumes and the restarts",
    ),
    Verdict(
        "ZeRO: the last rank's state_dict() refused, since the state was gathered on rank 0",
        RUN,
        changed(event("zero_consolidated", rank=LAST), lambda e: {"refused": ""}),
        scene=Said(*ZERO_OK, key="zero"),
        report=Said(
            r"^✓ consolidate_state_dict.*rank 1: Optimizer state has not been consolidated",
            r"^✗ consolidate_state_dict.*it returned a state",
        ),
        at=at(0, 0),
        absent="the status line counts the resumes and the restarts",
    ),
    Verdict(
        "ZeRO: the last rank's weights equal plain Adam's after the step",
        RUN,
        changed(event("zero_consolidated", rank=LAST), lambda e: {"weights_diff": 1e-9}),
        scene=Said(*ZERO_OK, key="zero"),
        report=Said(r"^✓ consolidate_state_dict", r"^✗ consolidate_state_dict"),
        at=at(0, 0),
        absent="the status line counts the resumes and the restarts",
    ),
    Verdict(
        "ZeRO: no parameter's state on two ranks",
        RUN,
        changed(event("zero_consolidated", rank=LAST), lambda e: {"owned": [*e.owned, "0.weight"]}),
        scene=Said(*ZERO_OK, key="zero"),
        report=Said(r"^✓ every parameter's state on one rank", r"^✗ every parameter's state"),
        at=at(0, 0),
        absent="the status line counts the resumes and the restarts",
    ),
    Verdict(
        "ZeRO: the ranks' shares add up to the state rank 0 gathered",
        RUN,
        changed(
            event("zero_consolidated", rank=LAST), lambda e: {"state_bytes": e.state_bytes + 4}
        ),
        scene=Said(*ZERO_OK, key="zero"),
        report=Said(r"^✓ every parameter's state on one rank", r"^✗ every parameter's state"),
        at=at(0, 0),
        absent="the status line counts the resumes and the restarts",
    ),
]

NUMBERS = [
    Number(
        "ZeRO: the bytes of Adam's state rank 0 gathered and saves",
        RUN,
        "zero.bytes",
        lambda evs: float(sum(e.state_bytes for e in _of(evs, "zero_consolidated"))),
        at=at(0, 0),
        perturb=both(
            changed(event("zero_consolidated", rank=0), lambda e: {"full_bytes": e.full_bytes + 8}),
            changed(
                event("zero_consolidated", rank=LAST), lambda e: {"state_bytes": e.state_bytes + 8}
            ),
        ),
    ),
    Number(
        "the last rank's file of the sharded checkpoint",
        RUN,
        "reshard.bytes",
        lambda evs: float(_of(evs, "reshard_compared", rank=LAST)[0].bytes),
        at=at(0, 0),
        perturb=changed(event("reshard_compared", rank=LAST), lambda e: {"bytes": e.bytes + 8}),
    ),
    Number(
        "the checkpoint's bytes",
        RUN,
        "saved.bytes",
        lambda evs: float(_of(evs, "checkpoint_saved")[0].bytes),
        at=at(0, 0),
        perturb=changed(event("checkpoint_saved"), lambda e: {"bytes": e.bytes + 1}),
    ),
    Number(
        "dropout-mask places that differ without the RNG state",
        RUN,
        "masks",
        lambda evs: float(sum(e.mask_diff for e in _of(evs, "resume_compared", variant="no_rng"))),
        at=at(0, 1),
        perturb=changed(
            event("resume_compared", variant="no_rng", rank=LAST),
            lambda e: {"mask_diff": e.mask_diff + 1},
        ),
    ),
    Number(
        "Adam's step after the first step without the optimizer's state",
        RUN,
        "adam",
        lambda evs: _of(evs, "resume_compared", variant="no_optimizer", rank=LAST)[0].adam_step,
        at=at(0, 1),
    ),
    Number(
        "steps lost",
        RUN,
        "lost",
        steps_lost,
        at=at(0, 3),
        perturb=both(
            changed(event("restart_outcome"), lambda e: {"resumed_from": e.resumed_from + 1}),
            every(
                event("restart_attempt", attempt=1),
                lambda e: {"start_step": e.start_step + 1},
            ),
        ),
    ),
    Number(
        "restarts",
        RUN,
        "restarts",
        lambda evs: float(max(a.attempt for a in _of(evs, "restart_attempt"))),
        at=at(0, 3),
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {
    "when-a-rank-dies": ("✓ everything restored", "✓ final weights equal the run never stopped")
}
# run whole by this kind's own real-run test (its slowest lesson), through run_headless
ELSEWHERE = {"when-a-rank-dies": "tests/kinds/resuming/test_real_run.py"}
