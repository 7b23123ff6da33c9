"""A real gloo run of the mixed-precision kind, three ranks (the odd one last), every gradient
in the events: the dtypes, the skipped step on every rank, the bytes, the values sent as 0
and the errors, each recomputed here from the recorded local gradients, without torch."""

from __future__ import annotations

import math
import struct

import pytest

from ddp_viz.kinds.mixed_precision.model import KIND, PrecisionSpec
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import is_summary, tensor_sample
from ddp_viz.model.timeline import RunStatus, record

pytestmark = [pytest.mark.gloo, pytest.mark.slow]
WORLD = 3


def half(v: float) -> float:
    """v rounded to float16 (IEEE binary16, to nearest even), as Python's struct packs it."""
    try:
        return struct.unpack("<e", struct.pack("<e", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def brain(v: float) -> float:
    """v (a float32) rounded to bfloat16: float32's top 16 bits, to nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def sent_as_zero(local: list[float], cast) -> int:
    """The hooks cast the bucket, then divide it by the world size, in the cast's dtype."""
    return sum(1 for v in local if v != 0 and cast(cast(v) / WORLD) == 0)


@pytest.mark.timeout(240)
def test_dtypes_skip_bytes_and_underflow_recomputed_from_the_gradients(engine) -> None:
    spec = PrecisionSpec(steps=3, width=4, spike_step=2, grads=True)
    scenario = Scenario.from_mapping({"world_size": WORLD, KIND: spec.to_dict()})
    rec = record(engine.run(scenario))
    assert rec.status is RunStatus.FINISHED, rec.reason
    part = rec.parts[KIND]
    assert part.complete(WORLD) == 3
    values = 8 * 4 + 4 + 4 * 4 + 4 + 4 + 1  # Linear(8, 4), Linear(4, 4), Linear(4, 1)
    for step in range(3):
        # the scaler's arm: only the last rank's own gradient overflowed at step 2 (from 1),
        # and every rank skipped it; the other steps every rank stepped
        scaler = part.at("fp16", step)
        spike = step == 1
        assert [r for r, e in sorted(scaler.items()) if e.local_inf] == ([2] if spike else [])
        assert all(e.averaged_inf == spike and e.stepped == (not spike) for e in scaler.values())
        assert part.at("bf16", step)[2].dtypes["activation"] == "bfloat16"
        assert part.at("bf16", step)[2].dtypes["bucket"] == "float32"
        for arm, size, cast in (("wire_fp16", 2, half), ("wire_bf16", 2, brain)):
            ranks = part.at(arm, step)
            local = {r: e.local for r, e in ranks.items()}
            names = sorted(local[0])
            assert not any(is_summary(local[r][n]) for r in ranks for n in names)
            flat = {r: [v for n in names for v in tensor_sample(local[r][n])] for r in ranks}
            assert len(flat[0]) == values
            exact = [sum(vs) / WORLD for vs in zip(*flat.values(), strict=True)]
            for r, e in ranks.items():
                assert e.sent == values * size, (arm, step, r)
                assert e.underflow == sent_as_zero(flat[r], cast), (arm, step, r)
                got = [v for n in names for v in tensor_sample(e.averaged[n])]
                diff = math.sqrt(sum((g - x) ** 2 for g, x in zip(got, exact, strict=True)))
                norm = math.sqrt(sum(x * x for x in exact))
                assert e.error == pytest.approx(diff / norm, rel=1e-6), (arm, step, r)
        # FSDP2: bf16 parameters halve what each rank gathers; the float32 reduce stays
        for r in range(WORLD):
            full, half_ = part.fsdp_at("fsdp_fp32", step)[r], part.fsdp_at("fsdp_bf16", step)[r]
            assert half_.gathered * 2 == full.gathered and half_.reduced == full.reduced
        # float16 lost some of the tiny inputs' gradients on the last rank, bfloat16 none
        assert part.at("wire_fp16", step)[2].underflow > 0
        assert part.at("wire_bf16", step)[2].underflow == 0
