"""The mixed-precision report and status line on copies of a recorded 3-rank run changed where
the code branches: a run without FSDP2, the other ranks' (and later steps') figures moved
where the report reads rank 0's first step or last step, dtypes not reported, a hook the
process group took, one rank stepping while the others skip, two skipped steps, and a query
before the first step is complete."""

from __future__ import annotations

import dataclasses

from ddp_viz.kinds.mixed_precision.report import precision_report, status_line
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

RUN = "mixed-precision-3-ranks.jsonl"  # the scaler skips step 5 (from 1) on every rank


def _changed(change, events=None):
    out = []
    for e in events if events is not None else load_recording(RUN):
        e = change(e)
        if e is not None:
            out.append(e)
    return out


def test_a_run_without_fsdp2_counts_five_ways_and_has_no_fsdp2_table() -> None:
    def no_fsdp(e):
        if e.kind == "precision_sharded":
            return None
        if e.kind == "run_started":
            table = {**e.scenario["mixed_precision"], "fsdp": False}
            return dataclasses.replace(e, scenario={**e.scenario, "mixed_precision": table})
        return e

    rec = record(_changed(no_fsdp))
    # float32, autocast bf16, autocast fp16 + scaler, fp16 and bf16 on the wire
    assert status_line(rec) == (
        "Run 1 finished: 5 ways on 3 ranks; ✓ step 5 skipped on every one of the 3 ranks together"
    )
    assert "FSDP2" not in precision_report(rec)


def _others_moved(e):
    """Every figure the report reads from rank 0 (step 1's dtypes, each step's |p − p32| and
    scale, the last step's FSDP2 bytes) moved on the other ranks, and rank 0's dtypes and
    FSDP2 bytes moved in the steps the report does not read."""
    if e.kind == "precision_step":
        if e.rank > 0:
            dtypes = {k: "float64" for k in e.dtypes}
            return dataclasses.replace(
                e, dtypes=dtypes, param_diff=e.param_diff + 1.0, scale=3.0, next_scale=5.0
            )
        if e.step > 0:
            return dataclasses.replace(e, dtypes={k: "float64" for k in e.dtypes})
    if e.kind == "precision_sharded":
        last = 7
        if e.rank > 0 or e.step < last:
            dtypes = {k: "float64" for k in e.dtypes}
            return dataclasses.replace(e, dtypes=dtypes, gathered=e.gathered + 7, reduced=1)
    return e


def test_the_report_reads_rank_0_s_first_step_and_last_step_whatever_the_others_say() -> None:
    events = load_recording(RUN)
    assert max(e.step for e in events if e.kind == "precision_sharded") == 7
    moved = precision_report(record(_changed(_others_moved, events)))
    assert moved == precision_report(record(events))  # its wording is tests/data/reports'
    assert "float64" not in moved


def test_a_dtype_not_reported_reads_a_dash() -> None:
    def unreported(e):
        if e.kind == "precision_step" and e.rank == 0 and e.step == 0 and e.arm == "wire_bf16":
            return dataclasses.replace(e, dtypes={k: v for k, v in e.dtypes.items() if k != "wire"})
        if e.kind == "precision_sharded" and e.rank == 0 and e.step == 7:
            return dataclasses.replace(e, dtypes={"activation": "float32"})
        return e

    said = precision_report(record(_changed(unreported))).splitlines()
    cells = ["float32"] * 4 + ["-", "float32"]
    assert f"{'bf16 on the wire':<24}" + "".join(f"{c:>11}" for c in cells) in said
    assert any(
        x.startswith("FSDP2, no policy") and x.endswith("         -         -") for x in said
    )


def test_a_hook_the_process_group_took_reads_accepted() -> None:
    events = _changed(
        lambda e: dataclasses.replace(e, message="") if e.kind == "precision_refused" else e
    )
    said = precision_report(record(events)).splitlines()
    assert "register_comm_hook(bf16_compress_hook) by its own name: accepted" in said


def test_the_last_rank_stepping_while_the_others_skip_is_a_cross() -> None:
    def split(e):
        if e.kind == "precision_step" and e.arm == "fp16" and e.step == 4 and e.rank == 2:
            return dataclasses.replace(e, stepped=True)
        return e

    rec = record(_changed(split))
    line = "✗ step 5: ranks [0, 1] skipped and ranks [2] stepped: the replicas now differ"
    assert line in precision_report(rec).splitlines()
    assert status_line(rec) == f"Run 1 finished: 7 ways on 3 ranks; {line}"


def test_two_steps_skipped_together_are_both_named() -> None:
    def skip_7(e):
        if e.kind == "precision_step" and e.arm == "fp16" and e.step == 6:
            return dataclasses.replace(e, stepped=False)
        return e

    said = precision_report(record(_changed(skip_7))).splitlines()
    assert "✓ step 5, 7 skipped on every one of the 3 ranks together" in said


def test_before_step_1_is_complete_no_dtype_row_is_shown() -> None:
    """Rank 0 reported step 1 of every arm; the last rank has not: nothing is said yet."""
    events = load_recording(RUN)
    start = next(i for i, e in enumerate(events) if e.kind == "run_started")
    early = events[: start + 1] + [
        e for e in events if e.kind == "precision_step" and e.step == 0 and e.rank < 2
    ]
    said = precision_report(record(early)).splitlines()
    i = said.index("dtypes rank 0 saw in step 1:")
    assert said[i + 1].startswith("arm") and said[i + 2] == ""
