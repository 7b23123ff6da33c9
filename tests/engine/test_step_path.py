"""The rank's per-step path: which kind hooks a step calls, how its two small events are
written, and the finite check of a step without values. No ranks: the pieces themselves."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch
from torch import nn

from ddp_viz.engine import outbox
from ddp_viz.engine.kind_parts import TrainingHooks, _AllHooks, kind_hooks
from ddp_viz.engine.step_values import detached, finite_params
from ddp_viz.kinds.accumulation.engine import AccumulationHooks
from ddp_viz.kinds.not_averaged.engine import NotAveragedHooks
from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario


class _Before(TrainingHooks):
    def before_step(self, trainer, step, batches) -> None:  # type: ignore[no-untyped-def]
        pass


class _AfterUnlessSkipped(TrainingHooks):
    skip = False

    def after_step(self, trainer, completed) -> None:  # type: ignore[no-untyped-def]
        pass

    def skips(self) -> frozenset[str]:
        return frozenset({"after_step"}) if self.skip else frozenset()


def test_a_plain_ddp_run_calls_no_kind_hook_at_any_step() -> None:
    scenario = default_scenario()
    hooks = kind_hooks(1, 0, scenario)
    assert isinstance(hooks, _AllHooks) and hooks.hooks  # kinds do join a plain DDP run …
    for h in hooks.hooks:
        if isinstance(h, NotAveragedHooks):
            h.buffers = None  # what built() decides for a model without buffers
    each = hooks.each_step()
    # … yet none of them is called per step: each point is an empty loop
    assert (each.before_step, each.step_events, each.forward_backward, each.after_step) == (
        (),
        (),
        (),
        (),
    )


def test_a_kind_that_needs_a_point_gets_it_in_order_and_one_that_skips_it_does_not() -> None:
    scenario = default_scenario()
    first, second = _Before(1, 0, scenario), _AfterUnlessSkipped(1, 0, scenario)
    third = _AfterUnlessSkipped(1, 0, scenario)
    third.skip = True
    each = _AllHooks([first, second, third]).each_step()
    assert each.before_step == (first.before_step,)
    assert each.after_step == (second.after_step,)  # the third skipped it in this run
    assert each.step_events == () and each.forward_backward == ()


def test_buffers_and_accumulation_keep_their_per_step_hooks_when_their_run_needs_them() -> None:
    scenario = default_scenario()
    buffers = NotAveragedHooks(1, 0, scenario)
    buffers.buffers = object()  # type: ignore[assignment]  # a model with BatchNorm
    assert buffers.each_step().step_events == (buffers.step_events,)
    acc = AccumulationHooks(1, 0, scenario)
    assert acc.each_step().forward_backward == (acc.forward_backward,)
    assert acc.each_step().before_step == ()  # no single-process run beside it
    acc.solo = nn.Linear(1, 1)  # rank 0 of a run with several micro-batches a step
    assert acc.each_step().before_step == (acc.before_step,)


def _timing(step: int) -> protocol.Timing:
    t = 29608.5975 + step * 0.0021
    return protocol.Timing(
        1,
        step,
        2,
        {"forward": [[t, t + 0.0004]], "backward": [[t + 0.0004, t + 0.0019]]},
        ready=[["bias", t + 0.0006], ["weight", t + 0.0007]],
        buckets=[{"index": 0, "params": ["bias"], "bytes": 4, "launched": t, "finished": None}],
    )


def test_the_fast_lines_decode_to_the_same_events_as_protocol_encode() -> None:
    events = [
        _timing(7),
        protocol.LocalGrad(1, 7, 2, 3.2e-07, {}, [["bias", "weight"]], [4, 5], 3, False),
        protocol.LocalGrad(1, 8, 2, 1234.5, {}, [["w"]], [0], 0, False),
    ]
    for event in events:
        line = outbox.encode(event)
        assert protocol.decode(line) == event
        assert json.loads(line) == json.loads(protocol.encode(event))
        assert protocol.line_kind(line.encode()) == event.kind  # read unparsed, as ever


def test_a_plain_line_is_the_line_of_the_event_its_values_would_build() -> None:
    """The two events of a step without values are written from their fields alone: the line
    must decode to the event those fields build, every field present, the kind first."""
    timing = _timing(9)
    fields = [getattr(timing, n) for n in ("run", "step", "rank", "spans", "ready", "buckets")]
    local = (4, 11, 3, 0.25, {}, [["b"], ["a", "c"]], [7, 2], 1, False)
    for cls, values in ((protocol.Timing, fields), (protocol.LocalGrad, local)):
        line = outbox.plain_line(cls, *values)
        assert protocol.decode(line) == cls(*values)
        assert json.loads(line) == json.loads(protocol.encode(cls(*values)))
        assert line.startswith(f'{{"event":"{cls.kind}",')  # what a skimming reader reads
    with pytest.raises(ValueError):  # a field left out would leave the line short of it
        outbox.plain_line(protocol.LocalGrad, *local[:-1])


def test_a_non_finite_loss_is_written_as_strict_json_words_not_null() -> None:
    for loss, word in ((math.nan, '"NaN"'), (math.inf, '"Infinity"'), (-math.inf, '"-Infinity"')):
        event = protocol.LocalGrad(1, 3, 2, loss, {}, [["w"]], [0], 0, False)
        line = outbox.encode(event)
        assert line == protocol.encode(event)
        assert f'"loss":{word}' in line and "null" not in line


def _summary(norm: float, sample: list[float]) -> dict:
    return {"shape": [3, 4], "norm": norm, "absmax": 2.5, "mean": -0.25, "sample": sample}


def _value_events(bad: float = 1.0, where: str = "") -> list[protocol.Event]:
    """A step's three value events; ``bad`` put at ``where`` (a place a float can be)."""

    def at(place: str, fine: float) -> float:
        return bad if where == place else fine

    grads = {"w": [1e-05, at("local", 2.0)], "b": _summary(at("norm", 3.0), [0.5, at("sample", 1)])}
    return [
        protocol.LocalGrad(1, 3, 2, at("loss", 0.5), grads, [["w"], ["b"]], [0, 4], 1),
        protocol.AveragedGrad(1, 3, 2, {"w": [at("avg", -7.5e-09)]}, {"w": at("vs_full", 0.0)}),
        protocol.Params(1, 3, 2, {"w": [0.25, at("param", 1e300)], "b": _summary(2, [at("p", 0)])}),
    ]


PLACES = ("local", "norm", "sample", "loss", "avg", "vs_full", "param", "p")


def test_a_step_with_values_is_written_by_orjson_and_reads_back_the_same() -> None:
    for event in _value_events():
        line = outbox.encode(event)
        assert protocol.decode(line) == event
        assert json.loads(line) == json.loads(protocol.encode(event))
        assert protocol.line_kind(line.encode()) == event.kind
    assert "0.00001" in outbox.encode(_value_events()[0])  # orjson's spelling: not the stdlib's


@pytest.mark.parametrize("where", PLACES)
def test_a_non_finite_value_anywhere_in_a_step_is_written_as_strict_json(where: str) -> None:
    for bad, word in ((math.nan, '"NaN"'), (math.inf, '"Infinity"'), (-math.inf, '"-Infinity"')):
        events = _value_events(bad, where)
        lines = [outbox.encode(e) for e in events]
        assert sum(word in line for line in lines) == 1, (where, bad)
        assert not any("null" in line for line in lines)
        for event, line in zip(events, lines, strict=True):
            if word in line:  # the strict encoder's line, spelled as ever
                assert line == protocol.encode(event)
            assert json.loads(line) == json.loads(protocol.encode(event))


def test_what_orjson_refuses_or_writes_other_than_ascii_goes_through_protocol_encode() -> None:
    for event in (
        protocol.Params(1, 3, 2, {"w": [2**70]}),  # past 64 bits
        protocol.Params(1, 3, 2, {"wéight": [1.5]}),  # the standard library writes \u00e9
    ):
        assert outbox.encode(event) == protocol.encode(event)
        assert outbox.encode(event).isascii()


def _nested(rng: random.Random, depth: int = 0) -> object:
    leaves = [math.nan, math.inf, -math.inf, 1e308, -2.5, 0.0, 3, True, None, "x", 2**70]
    if depth > 2 or rng.random() < 0.4:
        return rng.choice(leaves)
    items = [_nested(rng, depth + 1) for _ in range(rng.randrange(4))]
    if rng.random() < 0.5:
        return items
    return {f"k{i}": v for i, v in enumerate(items)}


def test_the_finite_walk_never_calls_a_value_finite_that_is_not() -> None:
    """Against the standard library's strict encoder, which refuses exactly the non-finite
    floats. The walk may say "not finite" where only a sum overflowed (then the strict encoder
    writes the line): never the other way."""
    rng = random.Random(52)
    for _ in range(3000):
        value = _nested(rng)
        try:
            json.dumps(value, allow_nan=False)
            finite = True
        except ValueError:
            finite = False
        walked = outbox._all_finite(value)
        assert finite or not walked, value  # a non-finite value is always seen
        # and a finite one is called finite unless a list of it sums past the largest float
        assert walked or not finite or "1e+308" in json.dumps(value), value
    assert not outbox._all_finite([1e308, 1e308])  # finite values whose sum is not
    assert outbox._all_finite([[1.0, 2], {"a": [3.5]}, "s", None])


def test_the_finite_check_sees_a_non_finite_value_in_any_parameter_after_the_step() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    views = detached(model)  # taken once, before any step
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert finite_params(views)
    last = list(model.parameters())[-1]
    for bad in (math.nan, math.inf, -math.inf):
        with torch.no_grad():
            last.grad = torch.zeros_like(last)
            last.grad[0] = -bad  # the optimizer writes the non-finite value in place
        opt.step()
        assert not finite_params(views), bad
        with torch.no_grad():
            last.zero_()
        assert finite_params(views)
    # tensors of one value are read as they are, of two or more summed
    pair = nn.Linear(1, 2)
    assert finite_params(detached(pair))  # its bias holds two values
    with torch.no_grad():
        pair.bias[1] = math.nan
    assert not finite_params(detached(pair))
    # a +inf in one tensor and a -inf in another do not cancel out
    first = next(model.parameters())
    with torch.no_grad():
        first[0, 0], last[0] = math.inf, -math.inf
    assert not finite_params(views)
