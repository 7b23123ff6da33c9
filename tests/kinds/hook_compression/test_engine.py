"""Real gloo runs of the comm-hooks kind: the bytes each hook handed to all-reduce against the
formulas, and every reported relative error against a float64 recomputation from the recorded
local gradients."""

from __future__ import annotations

import math

import pytest

from ddp_viz.kinds.hook_compression.model import KIND, HooksSpec
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import is_summary, tensor_sample
from ddp_viz.model.timeline import RunStatus, record

pytestmark = pytest.mark.gloo


def scenario(world: int, **table) -> Scenario:
    return Scenario.from_mapping({"world_size": world, KIND: table})


def formula_bytes(shapes: list[tuple[int, ...]], hook: str, r: int, squeezed: bool) -> int:
    """What one bucket costs, worked out by hand: float32 is 4 bytes, fp16 2; PowerSGD sends
    r (n + m) values for an n × m matrix it compresses (only when 2 r (n + m) < n m) and every
    other tensor whole."""
    values = sum(math.prod(s) for s in shapes)
    if hook == "fp16":
        return 2 * values
    if hook == "allreduce" or not squeezed:
        return 4 * values
    out = 0
    for s in shapes:
        n, m = s[0], math.prod(s[1:])
        k = min(n, m, r)
        out += k * (n + m) if len(s) > 1 and 2 * k * (n + m) < n * m else n * m
    return 4 * out


def check_bytes(rec, spec: HooksSpec) -> None:
    shapes = dict(spec.shapes())
    part = rec.parts[KIND]
    for v in spec.variants():
        for step in range(spec.steps):
            squeezed = v.hook == "powersgd" and step >= spec.warmup
            for rank, e in part.at(v.id, step).items():
                assert e.compressed == squeezed, (v.id, step)
                for b, names in enumerate(e.names):
                    want = formula_bytes([shapes[n] for n in names], v.hook, v.rank_r, squeezed)
                    assert e.sent[b] == want, (v.id, step, rank, b, names)
                    assert e.calls[b] == (3 if squeezed else 1), (v.id, step, b)


@pytest.mark.timeout(240)
def test_small_model_bytes_and_errors_recomputed_in_float64(engine) -> None:
    # width 4: every tensor has at most 64 values, so the events carry them whole
    spec = HooksSpec(steps=5, width=4, warmup=2, ranks=(1, 4), grads=True)
    rec = record(engine.run(scenario(2, **spec.to_dict())))
    assert rec.status is RunStatus.FINISHED, rec.reason
    part = rec.parts[KIND]
    assert rec.complete_prefix() == 5
    check_bytes(rec, spec)
    for v in spec.variants():
        for step in range(spec.steps):
            ranks = part.at(v.id, step)
            names = ranks[0].errors.keys()
            for name in names:
                assert not any(is_summary(ranks[r].local[name]) for r in (0, 1))
                local = [tensor_sample(ranks[r].local[name]) for r in (0, 1)]
                exact = [(a + b) / 2 for a, b in zip(*local, strict=True)]  # float64
                for r in (0, 1):
                    got = tensor_sample(ranks[r].averaged[name])
                    assert got == tensor_sample(ranks[0].averaged[name])  # ranks agree
                    diff = math.sqrt(sum((g - x) ** 2 for g, x in zip(got, exact, strict=True)))
                    norm = math.sqrt(sum(x * x for x in exact))
                    want = diff / norm if norm > 0 else diff
                    assert ranks[r].errors[name] == pytest.approx(want, rel=1e-9, abs=1e-15)
            errors = ranks[0].errors
            if v.hook == "allreduce":
                assert max(errors.values()) < 1e-6
            elif v.hook == "fp16":
                assert 0 < max(errors.values()) < 1e-2
    # the 4 × 16 input weight: compressed at r = 1; at r = 4 not worth it (2 · 4 · 20 ≥ 64)
    late = part.at("powersgd-r4", spec.steps - 1)[0]
    assert max(late.errors.values()) < 1e-6 and late.calls == [3] * len(late.calls)
    assert part.at("powersgd-r1-noef", spec.steps - 1)[0].errors["inp.weight"] > 1e-3
    assert part.at("powersgd-r1-noef", spec.steps - 1)[0].errors["hidden.weight"] < 1e-6


@pytest.mark.timeout(240)
def test_wide_model_at_four_ranks_sends_what_the_formulas_say(engine) -> None:
    spec = HooksSpec(steps=4, width=256, warmup=2, ranks=(1, 4), error_feedback="on")
    rec = record(engine.run(scenario(4, **spec.to_dict())))
    assert rec.status is RunStatus.FINISHED, rec.reason
    check_bytes(rec, spec)
    part = rec.parts[KIND]
    full = sum(part.at("allreduce", 3)[0].sent)
    assert full == 4 * sum(math.prod(s) for _, s in spec.shapes())
    assert sum(part.at("fp16", 3)[0].sent) * 2 == full
    # r = 1: the two big matrices send r (n + m); the 1 × 256 output weight and the biases whole
    # inp.weight 256 × 16, hidden.weight 256 × 256, out.weight 1 × 256 (whole), three biases
    assert sum(part.at("powersgd-r1", 3)[0].sent) == 4 * ((256 + 16) + (256 + 256) + 256 + 513)
    low = part.low_rank[("powersgd-r1", 3)]
    assert low.shape == [256, 256] and low.rank_r == 1
    # the corner of P Qᵀ, worked out from the reported P and Q
    for i, row in enumerate(low.approx):
        for j, value in enumerate(row):
            want = sum(low.p[i][k] * low.q[j][k] for k in range(low.rank_r))
            assert value == pytest.approx(want, rel=1e-5, abs=1e-9)
    assert part.at("powersgd-r1", 3)[0].residual > 0  # error feedback carries a residual
