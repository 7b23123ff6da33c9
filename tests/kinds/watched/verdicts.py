"""A watched script: every step captured in full had identical averaged gradients on every
rank, bit for bit (the page, and the summary ``ddp-viz watch`` prints when the command ends);
the ranks' parameters agree (the report and the status line)."""

from ddp_viz.kinds.watched.events import (
    WatchDigests,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchNonFinite,
)
from ddp_viz.kinds.watched.history import HISTORY, History
from ddp_viz.kinds.watched.watch.command import agreement_lines, doctor_lines
from ddp_viz.model.timeline import RunRecord
from tests.kinds.verdicts_base import Number, Said, Verdict, at, changed, event, inserted, nudged

RUN = "watched-2-ranks.jsonl"


def watch_summary(rec: RunRecord) -> str:
    """What ``ddp-viz watch`` prints about the averages when the command ends."""
    full = [st for st in rec.steps if st.complete(rec.world_size)]
    part = rec.parts.get(HISTORY)
    said = agreement_lines(rec, full, part if isinstance(part, History) else None)
    return "\n".join(said + doctor_lines(rec))


# the doctor's events are sent by the ranks as they happen; the recording of a healthy run has
# none, so each is added where the rank would have sent it
DIGESTS = {"0.weight": "1c0ffee1", "0.bias": "0badcafe", "2.weight": "5eed5eed"}


def digests(events):
    """Every rank's CRC-32s entering steps 2 to 4, alike (a run in sync)."""
    return [
        WatchDigests(run=1, step=s, rank=r, digests=dict(DIGESTS))
        for s in (1, 2, 3)
        for r in (0, 1)
    ]


def other_bytes(e):
    return {"digests": {**e.digests, "0.weight": "deadbeef"}}


def non_finite(events):
    """Rank 0's NaN at step 4 arrives first; rank 1's at step 3 is the first in the run."""
    return [
        WatchNonFinite(run=1, step=3, rank=0, loss=float("inf"), tensors=[]),
        WatchNonFinite(run=1, step=2, rank=1, loss=float("nan"), tensors=["0.weight"]),
    ]


BUCKET = {"seq": 9, "op": "all_reduce", "site": "train.py:40 in main", "sizes": [[97]], "bucket": 0}


def hang(events):
    """Rank 0 waits in step 3's gradient all-reduce; rank 1 (the last) never came: it sleeps."""
    inside = {**BUCKET, "step": 2, "for_s": 12.6}
    return [
        WatchHang(
            run=1,
            stalled_s=12.5,
            threshold_s=10.0,
            ranks=[
                {
                    "rank": 0,
                    "state": "inside",
                    "quiet_s": 12.5,
                    "step": 3,
                    "inside": inside,
                    "last": {**BUCKET, "step": 2},
                    "stack": ["train.py:40 in main: loss.backward()"],
                },
                {
                    "rank": 1,
                    "state": "running",
                    "quiet_s": 12.5,
                    "step": 3,
                    "last": {**BUCKET, "seq": 8, "step": 1},
                    "stack": ["train.py:33 in main: time.sleep(600)"],
                },
            ],
        )
    ]


def crash(events):
    """Rank 1 (the last) raises in its third step and exits with 1."""
    return [
        WatchFailure(
            run=1,
            rank=1,
            step=3,
            at=0.0,
            type="ValueError",
            message="bad row",
            site="train.py:31 in main",
            stack=["train.py:31 in main: raise ValueError('bad row')"],
        ),
        WatchExit(run=1, rank=1, pid=4242, exitcode=1),
    ]


NOTHING_FOUND = r"^ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found$"


VERDICTS = [
    Verdict(
        "averages identical on every rank, bit for bit",
        RUN,
        # a middle step, the last rank; a summary of 96 values: its digest, norm and sample
        changed(event("averaged_grad", step=1, rank=1), nudged("grads", 1e-7)),
        scene=Said(
            r"^✓ averages identical on every rank, bit for bit$",
            r"^✗ the averaged gradients differ between ranks$",
            key="averages.identical",
        ),
        report=Said(
            r"✓ averaged gradients identical on every rank", r"✗ averaged gradients differ"
        ),
        report_of=watch_summary,
        at=at(1, 0),
        absent="the status line's ✓ ranks agree is the parameters' check",
    ),
    Verdict(
        "ranks agree",
        RUN,
        changed(event("params", step=1, rank=1), nudged("params", 1e-3)),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"\. ✓ ranks agree\.$", r"\. ✗ ranks differ"),
        absent="the page shows the averages' check, not the parameters'",
    ),
    Verdict(
        "no desync: every rank holds rank 0's bytes entering each step",
        RUN,
        changed(event("watch_digests", step=2, rank=1), other_bytes),
        base=inserted(event("watch_dropped"), digests),
        scene=Said(r"^(?!.*✗ desync)", r"✗ desync: entering step 3 \(after step 2\), rank 1 held"),
        report=Said(NOTHING_FOUND, r"^ddp-viz verdict: desync: rank\(s\) 1 differ from rank 0 "),
        report_of=watch_summary,
        status=Said(r"\. ✓ ranks agree\.$", r"\. ✗ desync: rank\(s\) 1 differ from rank 0"),
    ),
    Verdict(
        "no NaN: every rank's loss and gradients finite",
        RUN,
        inserted(event("watch_dropped"), non_finite),
        scene=Said(r"^(?!.*✗ non-finite)", r"✗ non-finite: at step 3 on rank 1 \(the first\)"),
        report=Said(NOTHING_FOUND, r"^ddp-viz verdict: rank 1 is the first non-finite, at step 3$"),
        report_of=watch_summary,
        status=Said(r"\. ✓ ranks agree\.$", r"\. ✗ rank 1 is the first non-finite, at step 3\.$"),
    ),
    Verdict(
        "no hang: some rank moved within the threshold",
        RUN,
        inserted(event("watch_dropped"), hang),
        scene=Said(
            r"^(?!.*✗ hang)",
            r"✗ hang: no rank has moved for 12\.5 s \(threshold 10\.0 s\) "
            r"missing from all_reduce #9: rank 1 ",
        ),
        report=Said(
            NOTHING_FOUND,
            r"^ddp-viz verdict: hang: rank 1 never joined all_reduce #9 that the others are in; "
            r"rank 1 is running train\.py:33 in main",
        ),
        report_of=watch_summary,
        status=Said(r"\. ✓ ranks agree\.$", r"\. ✗ hang: rank 1 never joined all_reduce #9"),
    ),
    Verdict(
        "no crash: every rank's process ended cleanly",
        RUN,
        inserted(event("watch_dropped"), crash),
        scene=Said(
            r"^(?!.*✗ crash)",
            r"✗ crash: rank 1 raised ValueError: bad row — at train\.py:31 "
            r"in main, in its step 3 \(loop index 2\) or after it, before it began any later step "
            r"\(the first failure: the cause\)",
        ),
        report=Said(
            NOTHING_FOUND,
            r"^ddp-viz verdict: rank 1 is the root cause: ValueError at train\.py:31 in main, "
            r"in its step 3 \(loop index 2\) or after it, before it began any later step$",
        ),
        report_of=watch_summary,
        status=Said(r"\. ✓ ranks agree\.$", r"\. ✗ rank 1 is the root cause: ValueError"),
    ),
]


# --- numbers: the page's gradient table, for a tensor sent as a summary (96 values) --------------
TENSOR = "0.weight"


def local_norm(events, step: int, rank: int) -> float:
    e = next(e for e in events if e.kind == "local_grad" and (e.step, e.rank) == (step, rank))
    return float(e.grads[TENSOR]["norm"])


def spread(step: int):
    """How far the ranks' local gradients' norms lie apart: the largest less the smallest."""

    def run(events) -> float:
        norms = [local_norm(events, step, r) for r in (0, 1)]
        return max(norms) - min(norms)

    return run


def larger(e):
    """Rank 1's local 0.weight half as large again (its digest no longer its bytes')."""
    g = dict(e.grads)
    g[TENSOR] = {**g[TENSOR], "norm": g[TENSOR]["norm"] * 1.5, "digest": "0" * 8}
    return {"grads": g}


NUMBERS = [
    Number(
        "the last rank's local gradient norm",
        RUN,
        f"rank1.local.{TENSOR}",
        lambda events: local_norm(events, 1, 1),
        at=at(1, 0),
        perturb=changed(event("local_grad", step=1, rank=1), larger),
    ),
    Number(
        "the spread of the ranks' local norms",
        RUN,
        f"spread.{TENSOR}",
        spread(1),
        at=at(1, 0),
        perturb=changed(event("local_grad", step=1, rank=1), larger),
    ),
]
