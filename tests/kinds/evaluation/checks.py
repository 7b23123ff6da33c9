"""What an evaluation run must show, recomputed without the engine's code (pure Python): the
held-out rows evaluated in float64 from the model state rank 0 reported, then every one of the
four accuracies from the ranks' own shares, and the shares' padding against the rows."""

from __future__ import annotations

import math
from collections import Counter

from ddp_viz.kinds.evaluation.record import EvalRecord

EPS = 1e-5  # BatchNorm1d's default


def forward64(state: dict[str, list[float]], row: list[float]) -> list[float]:
    """Linear → BatchNorm1d (eval: running statistics) → tanh → Dropout (eval: nothing) →
    Linear, in Python floats (float64)."""
    w, b = state["inp.weight"], state["inp.bias"]
    hidden, features = len(b), len(row)
    h = [b[j] + sum(w[j * features + k] * row[k] for k in range(features)) for j in range(hidden)]
    mean, var = state["norm.running_mean"], state["norm.running_var"]
    gamma, beta = state["norm.weight"], state["norm.bias"]
    h = [
        math.tanh((h[j] - mean[j]) / math.sqrt(var[j] + EPS) * gamma[j] + beta[j])
        for j in range(hidden)
    ]
    w2, b2 = state["out.weight"], state["out.bias"]
    return [b2[c] + sum(w2[c * hidden + j] * h[j] for j in range(hidden)) for c in range(len(b2))]


def right64(p: EvalRecord) -> list[bool]:
    """Per held-out row: is the float64 prediction right?"""
    ref = p.reference
    assert ref is not None
    out = []
    for row, label in zip(ref.x, ref.y, strict=True):
        logits = forward64(ref.state, row)
        out.append(max(range(len(logits)), key=logits.__getitem__) == label)
    return out


def expected_ways(p: EvalRecord, right: list[bool]) -> dict[str, float]:
    """The four accuracies from the shares' rows and the float64 answers: a place is padding
    when it is past the first ``len(right)`` places of the padded list (rank r, place i: r +
    i · world)."""
    world, n = len(p.shares), len(right)
    kept = {
        r: [i for k, i in enumerate(s.indices) if r + k * world < n] for r, s in p.shares.items()
    }
    every = [i for s in p.shares.values() for i in s.indices]
    acc = {r: sum(right[i] for i in rows) / len(rows) for r, rows in kept.items()}
    all_kept = [i for rows in kept.values() for i in rows]
    return {
        "rank0": sum(right[i] for i in p.shares[0].indices) / len(p.shares[0].indices),
        "mean": sum(acc.values()) / world,
        "padded": sum(right[i] for i in every) / len(every),
        "kept": sum(right[i] for i in all_kept) / len(all_kept),
    }


def check_accuracies(p: EvalRecord) -> dict[str, float]:
    """Every number the ranks reported against the float64 recomputation; returns it."""
    from ddp_viz.kinds.evaluation.record import ranks_agree, reference_accuracy, ways

    right = right64(p)
    ref = p.reference
    assert ref is not None and ref.rows == len(right)
    assert ref.correct == right, "the engine's float64 reference differs from the recomputation"
    want = expected_ways(p, right)
    got = {w.key: w.value for w in ways(p)}
    for key, value in want.items():
        assert math.isclose(got[key], value, rel_tol=0, abs_tol=1e-12), (key, got[key], value)
    assert math.isclose(want["kept"], sum(right) / len(right), abs_tol=1e-12)
    assert reference_accuracy(p) == sum(right) / len(right)
    assert ranks_agree(p)
    for r, share in p.shares.items():  # each rank's float32 answers are the float64 ones
        assert share.correct == [right[i] for i in share.indices], r
    # each way is marked equal to one process exactly when its number is: the ways that are
    # not differ from it by less than 0.01 in these runs, so a loose tolerance would mark them
    whole = sum(right) / len(right)
    marked = {w.key: w.equal for w in ways(p)}
    assert marked == {k: math.isclose(v, whole, rel_tol=0, abs_tol=1e-12) for k, v in want.items()}
    assert not all(marked.values()), "a recording where every way agrees tells ✓ from nothing"
    return want


def check_padding(p: EvalRecord, rows: int) -> None:
    """The places a rank keeps cover every row exactly once: the de-padding counts no row twice
    and loses none."""
    kept = Counter(
        i for s in p.shares.values() for i, pad in zip(s.indices, s.padding, strict=True) if not pad
    )
    assert kept == Counter(range(rows)), "without the padding every row is counted once"
