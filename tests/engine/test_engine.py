"""Real DDP runs: gloo ranks in the engine's pool, no mocks, no fixed ports."""

from __future__ import annotations

import os
import time

import pytest
import torch
from torch import nn

from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario, default_scenario
from ddp_viz.model.timeline import RunRecord, RunStatus, grads_close, record, scalar
from tests.conftest import assert_lesson_numbers, load_recording

pytestmark = pytest.mark.gloo


def run(engine, scenario: Scenario, **kw) -> RunRecord:
    return record(engine.run(scenario, **kw))


def plain_sgd(scenario: Scenario) -> list[tuple[float, float]]:
    """Single-process full-batch SGD: what DDP must reproduce with equal shards."""
    model = nn.Linear(1, 1)
    with torch.no_grad():
        model.weight.fill_(scenario.init_weight)
        model.bias.fill_(scenario.init_bias)
    opt = torch.optim.SGD(model.parameters(), lr=scenario.lr)
    x = torch.tensor(scenario.x).unsqueeze(1)
    y = torch.tensor(scenario.y).unsqueeze(1)
    out = []
    for _ in range(scenario.steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        out.append((model.weight.item(), model.bias.item()))
    return out


def test_lesson_numbers_from_a_real_two_rank_run(engine) -> None:
    rec = run(engine, default_scenario())
    assert rec.status is RunStatus.FINISHED, rec.reason
    st = rec.steps[0]
    pids = {rec.pids[0], rec.pids[1]}
    assert len(pids) == 2 and engine.proc.pid not in pids  # two separate rank processes
    assert 1 <= rec.cores <= (os.cpu_count() or 1)  # the all-reduce chart warns by it
    # ranks yield to the window at the lowest priority (pool.RANK_NICENESS)
    assert [os.getpriority(os.PRIO_PROCESS, pid) for pid in sorted(pids)] == [19, 19]
    assert_lesson_numbers(st)
    for r in (0, 1):
        spans = st.ranks[r].spans
        (fwd,), (bwd,), (opt,) = spans["forward"], spans["backward"], spans["step"]
        assert fwd[0] <= fwd[1] <= bwd[0] <= bwd[1] <= opt[0] <= opt[1]
        # the all-reduce happened inside backward, as DDP does it
        assert all(bwd[0] <= a <= b <= bwd[1] for a, b in spans["allreduce"])
        assert sorted(n for b in st.ranks[r].buckets for n in b) == ["bias", "weight"]
    assert st.reference is not None
    assert st.reference.full_batch_grads == {"weight": [-27.5], "bias": [-9.5]}
    assert st.average_is_full_batch()


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_twenty_steps_match_single_process_sgd(engine, world_size: int) -> None:
    scenario = default_scenario().with_changes(world_size=world_size, steps=20)
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert len(rec.complete_steps()) == 20
    expected = plain_sgd(scenario)
    for st, (w, b) in zip(rec.steps, expected, strict=True):
        assert st.average_is_full_batch(), f"step {st.step}"
        assert st.ranks_agree(), f"step {st.step}"
        for rs in st.ranks.values():
            assert scalar(rs.params, "weight") == pytest.approx(w, abs=1e-6)
            assert scalar(rs.params, "bias") == pytest.approx(b, abs=1e-6)
    if world_size == 4:
        locals_ = [st_r.local for _, st_r in sorted(rec.steps[0].ranks.items())]
        assert [(g["weight"][0], g["bias"][0]) for g in locals_] == [
            (-5, -5),
            (-16, -8),
            (-33, -11),
            (-56, -14),
        ]


def test_uneven_shards_run_and_differ_from_the_full_batch(engine) -> None:
    scenario = default_scenario().with_changes(world_size=3, steps=3)
    rec = run(engine, scenario, timeout=60)
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert rec.shards == [[0, 1], [2], [3]]
    for st in rec.steps:
        assert st.ranks_agree()
        assert st.average_is_full_batch() is False
        assert grads_close(st.averaged(), st.reference.manual_average)
        assert grads_close(st.averaged(), st.mean_of_locals())


@pytest.mark.parametrize(
    "name",
    [
        "default-run.jsonl",
        "four-ranks-3-steps.jsonl",
        "uneven-3-ranks.jsonl",
        "mlp-2-ranks-3-steps.jsonl",
        "not-averaged.jsonl",
        "not-averaged-no-sync.jsonl",
        "not-averaged-unused.jsonl",
        "not-averaged-find-unused.jsonl",
        "long-run-32-steps.jsonl",
        "who-splits-32-steps.jsonl",
    ],
)
def test_recordings_match_a_live_run(engine, name: str) -> None:
    recorded = record(load_recording(name))
    scenario = Scenario.from_mapping(recorded.scenario)
    live = run(engine, scenario)
    assert len(live.steps) == len(recorded.steps)
    for a, b in zip(live.steps, recorded.steps, strict=True):
        assert a.has_values == b.has_values and (a.reference is None) == (b.reference is None)
        for r in a.ranks:
            assert a.ranks[r].loss == pytest.approx(b.ranks[r].loss, rel=1e-5)
            if not b.has_values:
                continue
            for attr in ("local", "averaged", "params"):
                assert grads_close(getattr(a.ranks[r], attr), getattr(b.ranks[r], attr))
        if b.reference is not None:
            assert grads_close(a.reference.full_batch_grads, b.reference.full_batch_grads)
    for key, want in recorded.parts["not_averaged"].buffers.items():
        got = live.parts["not_averaged"].buffers[key]
        assert grads_close(got.before, want.before) and grads_close(got.after, want.after)
    assert set(live.parts["not_averaged"].reducer_errors) == set(
        recorded.parts["not_averaged"].reducer_errors
    )


def test_invalid_run_command_names_the_field(engine) -> None:
    engine.send(protocol.RunCommand(run=50, scenario={"x": [1, 2], "y": [1, 2], "world_size": 0}))
    err = engine.wait_for(protocol.CommandError, timeout=30)
    assert err.field == "world_size" and "between 1 and 8" in err.message


@pytest.mark.parametrize("kind", ["exception", "exit"])
def test_a_failing_rank_fails_the_run_promptly_and_the_next_run_works(engine, kind) -> None:
    scenario = default_scenario().with_changes(world_size=2, steps=5)
    t0 = time.monotonic()
    rec = run(engine, scenario, fault={"rank": 1, "step": 2, "kind": kind}, timeout=30)
    assert time.monotonic() - t0 < 5
    assert rec.status is RunStatus.FAILED and rec.failed_rank == 1
    assert ("injected fault" in rec.reason) if kind == "exception" else ("code 17" in rec.reason)
    assert len(rec.complete_steps()) == 2
    again = run(engine, scenario)
    assert again.status is RunStatus.FINISHED and len(again.complete_steps()) == 5


def test_an_accumulating_run_records_every_step_however_long(engine) -> None:
    """Gradient accumulation is about each micro-batch of each step: past step 20 too."""
    from ddp_viz.kinds.accumulation.record import micro_of
    from ddp_viz.model.course import load_lesson
    from ddp_viz.model.reference import values_at_every_step

    scenario = load_lesson("accumulate-with-no-sync").scenario().with_changes(steps=25)
    assert values_at_every_step(scenario.to_dict())
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FINISHED and len(rec.steps) == 25, rec.reason
    assert all(st.has_values and st.complete(rec.world_size) for st in rec.steps)
    assert all(micro_of(rec, st.step, r) for st in rec.steps for r in st.ranks)


def test_ranks_whose_losses_overflow_at_different_steps_stop_together(engine) -> None:
    """lr 0.2 diverges slowly: at step 51 one rank's loss overflowed to inf while the other's
    did not and both gradients stayed finite. A rank that stopped on its own loss left the
    other in an all-reduce alone (gloo: "Read error"); they stop on the parameters, which
    every rank holds alike, and past step 20, at a step without values."""
    rec = run(engine, default_scenario().with_changes(lr=0.2, steps=200))
    assert rec.status is RunStatus.FAILED and rec.reason.startswith("diverged at step "), rec.reason
    assert "gloo" not in rec.reason and "Read error" not in rec.reason
    assert len(rec.steps) > 20 and not rec.steps[-1].has_values
    assert rec.reason.startswith(f"diverged at step {len(rec.steps)}: ")
    assert all(len(st.ranks) == 2 for st in rec.steps)


def test_divergence_ends_the_run_with_a_clear_reason(engine) -> None:
    scenario = default_scenario().with_changes(lr=10.0, steps=500)
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FAILED
    # the message counts steps from 1, as every view: the last step recorded is the one
    assert rec.reason.startswith(f"diverged at step {len(rec.steps)}: ")
    assert rec.steps_planned == 500 and len(rec.steps) < 500


MLP = {"kind": "mlp", "hidden": [8], "activation": "tanh", "seed": 0}


def mlp_scenario(world_size: int, steps: int = 20, dtype: str = "float32") -> Scenario:
    return Scenario.from_mapping(
        {
            "x": [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
            "y": [1.0, -0.5, -1.0, -0.5, 1.0, 3.5, 7.0, 11.5],
            "world_size": world_size,
            "steps": steps,
            "lr": 0.05,
            "model": MLP | {"dtype": dtype},
        }
    )


def test_the_model_spec_names_exactly_the_parameters_the_engine_builds() -> None:
    from ddp_viz.engine.models import build_model

    for spec in (MLP, {"kind": "mlp", "hidden": [3, 5], "activation": "relu", "seed": 7}):
        scenario = mlp_scenario(2).with_changes(model=spec)
        built = [(n, tuple(p.shape)) for n, p in build_model(scenario).named_parameters()]
        assert built == [(p.name, p.shape) for p in scenario.model.parameters()]
    linear = [(n, tuple(p.shape)) for n, p in build_model(default_scenario()).named_parameters()]
    assert linear == [(p.name, p.shape) for p in default_scenario().model.parameters()]


def single_process_sgd(scenario: Scenario) -> list[dict[str, list[float]]]:
    """The same model, the same start, full-batch SGD in one process (float32, as the ranks)."""
    from ddp_viz.engine.models import build_model, named_values, torch_dtype

    model = build_model(scenario)
    opt = torch.optim.SGD(model.parameters(), lr=scenario.lr)
    x = torch.tensor(scenario.x, dtype=torch_dtype(scenario)).unsqueeze(1)
    y = torch.tensor(scenario.y, dtype=torch_dtype(scenario)).unsqueeze(1)
    out = []
    for _ in range(scenario.steps):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        out.append(named_values(model))
    return out


# float32 ranks round at about 1e-6 against the float64 reference (measured: at most 1.6e-6
# for the gradients, 3e-6 for the parameters after 20 steps); float64 ranks are held to 1e-6.
def test_a_long_run_has_the_reference_at_the_steps_the_policy_names(engine) -> None:
    from ddp_viz.model.reference import reference_due

    rec = run(engine, default_scenario().with_changes(steps=205))
    assert rec.status is RunStatus.FINISHED, rec.reason
    with_reference = [st.step for st in rec.steps if st.reference is not None]
    assert with_reference == [s for s in range(205) if reference_due(s)]
    assert with_reference[-3:] == [19, 99, 199]  # steps 20, 100 and 200 as the window counts
    for st in rec.steps:
        # a step without values has no parameters to compare; every reference step has them
        assert st.ranks_agree() is (True if st.has_values else None)
        if st.reference is not None:
            assert st.has_values and st.average_is_full_batch()


@pytest.mark.parametrize(("dtype", "tol"), [("float64", 1e-6), ("float32", 1e-5)])
@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_an_mlp_averages_every_parameter_like_the_full_batch(
    engine, world_size: int, dtype: str, tol: float
) -> None:
    scenario = mlp_scenario(world_size, dtype=dtype)
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert [p.name for p in rec.params] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert rec.initial_agree()  # DDP broadcast rank 0's start to every rank
    expected = single_process_sgd(scenario)
    assert len(rec.complete_steps()) == 20
    for st, want in zip(rec.steps, expected, strict=True):
        full = st.reference.full_batch_grads
        for rs in st.ranks.values():
            assert set(rs.averaged) == set(full)
            assert grads_close(rs.averaged, full, tol=tol), f"step {st.step + 1}"
            assert grads_close(rs.params, want, tol=tol), f"step {st.step + 1}"
        assert st.average_is_full_batch() and st.ranks_agree()


def bucketed_mlp(steps: int) -> Scenario:
    """A small MLP on two ranks whose gradients DDP splits over several buckets."""
    return Scenario.from_mapping(
        {
            "x": [float(i) for i in range(-4, 4)],
            "y": [0.5 * i * i for i in range(-4, 4)],
            "world_size": 2,
            "steps": steps,
            "lr": 0.01,
            "model": {"kind": "mlp", "hidden": [32, 32, 32]},
            "ddp": {"bucket_cap_mb": 0.002},  # about 2 KB: a few layers per bucket
        }
    )


def test_buckets_overlap_backward_and_are_rebuilt_after_step_one(engine) -> None:
    """A small bucket_cap_mb splits an MLP over several buckets; the capture records when each
    gradient became ready and when each bucket's all-reduce ran."""
    from ddp_viz.kinds.bucket_timeline.overlap import layouts, overlap, ready_order

    scenario = bucketed_mlp(steps=4)
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FINISHED, rec.reason
    names = [p.name for p in rec.params]
    per_step = layouts(rec)
    assert per_step[1] != per_step[0]  # DDP rebuilds its buckets after the first iteration
    assert len(per_step[1]) >= 3 and per_step[2] == per_step[1]
    launched_early = 0
    for st in rec.steps:
        for rs in st.ranks.values():
            # backward produces gradients from the last layer to the first
            assert ready_order(rs)[0].startswith("6.") and ready_order(rs)[-1].startswith("0.")
            assert sorted(ready_order(rs)) == sorted(names)
            o = overlap(rs)
            assert o is not None and 0 <= o.hidden_s <= o.allreduce_s
            (start, end) = rs.spans["backward"][0]
            for b in rs.bucket_spans:
                assert start <= b["launched"] <= b["finished"] <= end + 1e-3
            if st.step >= 1:
                assert sum(b["bytes"] for b in rs.bucket_spans) == 4 * sum(
                    p.numel for p in rec.params
                )
                first = min(b["launched"] for b in rs.bucket_spans)
                launched_early += first < o.last_ready
    assert launched_early > 0  # a bucket's all-reduce started before backward had finished


def test_a_long_run_sends_values_at_some_steps_and_trains_every_step(engine) -> None:
    """Past step 20 only every 10th step and the last carry gradients and parameters; every
    step still brings its loss, its buckets and their timings, and trains: step 30's
    parameters are those of 30 full-batch SGD steps in one float64 process."""
    from ddp_viz.engine.models import build_model
    from ddp_viz.kinds.bucket_timeline.overlap import overlap
    from ddp_viz.model.tensors import tensor_norm

    scenario = bucketed_mlp(steps=32)
    events = list(engine.run(scenario))
    rec = record(events)
    assert rec.status is RunStatus.FINISHED and rec.complete_prefix() == 32, rec.reason
    valued = {e.step for e in events if isinstance(e, protocol.Params)}
    assert valued == {*range(20), 29, 31}
    assert {e.step for e in events if isinstance(e, protocol.AveragedGrad)} == valued
    for st in rec.steps:
        for rs in st.ranks.values():
            assert rs.loss is not None and rs.values == (st.step in valued)
            # one bucket at step 1; DDP's rebuild splits it after that
            assert len(rs.bucket_spans) >= (3 if st.step else 1)
            assert all(b["finished"] for b in rs.bucket_spans)
            assert overlap(rs) is not None and len(rs.ready) == len(rec.params)
    assert rec.steps[29].ranks_agree() and rec.steps[29].averaged_agree()
    model = build_model(scenario).double()  # one process, float64, the whole batch each step
    x = torch.tensor(scenario.x, dtype=torch.float64).unsqueeze(1)
    y = torch.tensor(scenario.y, dtype=torch.float64).unsqueeze(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=scenario.lr)
    for _ in range(30):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    for name, p in model.named_parameters():
        got = tensor_norm(rec.steps[29].ranks[1].params[name])
        assert got == pytest.approx(float(p.detach().norm()), rel=1e-5), name


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_big_tensors_travel_as_summaries_and_the_checks_stay_exact(engine, world_size) -> None:
    """An MLP of about 130 k values: summaries keep every event line small, the ranks'
    digests show bit-identical averages, and rank 0's comparison with the reference covers
    every value."""
    from ddp_viz.engine.models import build_model
    from ddp_viz.model.tensors import is_summary

    scenario = Scenario.from_mapping(
        {
            "x": [float(i) for i in range(-4, 4)],
            "y": [0.5 * i * i for i in range(-4, 4)],
            "world_size": world_size,
            "steps": 2,
            "lr": 0.01,
            "model": {"kind": "mlp", "hidden": [256, 256, 256]},
            "ddp": {"bucket_cap_mb": 0.25},
        }
    )
    assert sum(p.numel for p in scenario.model.parameters()) > 130_000
    events = list(engine.run(scenario))
    assert max(len(protocol.encode(e)) for e in events) < 64 * 1024  # far below the 1 MiB cap
    rec = record(events)
    assert rec.status is RunStatus.FINISHED, rec.reason
    for st in rec.steps:
        assert st.averaged_agree() and st.ranks_agree() and st.average_is_full_batch()
        digests = {rs.averaged["2.weight"]["digest"] for rs in st.ranks.values()}
        assert len(digests) == 1  # bit-identical on every rank
        assert max(st.ranks[0].vs_full_batch.values()) < 1e-5
    # the norms in the events equal a single-process float64 computation at the same start
    model = build_model(scenario).double()
    x = torch.tensor(scenario.x, dtype=torch.float64).unsqueeze(1)
    y = torch.tensor(scenario.y, dtype=torch.float64).unsqueeze(1)
    nn.functional.mse_loss(model(x), y).backward()
    averaged = rec.steps[0].ranks[0].averaged
    for name, p in model.named_parameters():
        got = (
            averaged[name]["norm"]
            if is_summary(averaged[name])
            else float(torch.tensor(averaged[name]).norm())
        )
        assert got == pytest.approx(float(p.grad.norm()), rel=1e-6), name


@pytest.mark.parametrize(("cap", "buckets"), [(0.001, 4), (0.25, 3), (25.0, 1)])
def test_the_buckets_lesson_gets_the_bucket_counts_its_text_names(engine, cap, buckets) -> None:
    """The lesson says 4 buckets at its default cap, 3 at 0.25 MiB and 1 at DDP's default."""
    from ddp_viz.kinds.bucket_timeline.overlap import layouts, overlap, ready_order
    from ddp_viz.model.course import load_lesson

    scenario = load_lesson("buckets").scenario()
    scenario = scenario.with_changes(steps=4, ddp={"bucket_cap_mb": cap})
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FINISHED, rec.reason
    per_step = layouts(rec)
    assert len(per_step[0]) == 1  # step 1: every gradient in one bucket
    assert all(len(layout) == buckets for layout in per_step[1:])
    early = 0
    for st in rec.steps:
        for rs in st.ranks.values():
            assert ready_order(rs)[:2] == ["6.bias", "6.weight"]
            assert ready_order(rs)[-2:] == ["0.bias", "0.weight"]
            o = overlap(rs)
            early += min(b["launched"] for b in rs.bucket_spans) < o.last_ready
    assert (early > 0) == (buckets > 1)  # with one bucket nothing can start early


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_the_buckets_lesson_averages_equal_the_full_batch(engine, world_size) -> None:
    from ddp_viz.engine.models import build_model
    from ddp_viz.model.course import load_lesson
    from ddp_viz.model.tensors import tensor_norm

    scenario = load_lesson("buckets").scenario().with_changes(world_size=world_size, steps=3)
    rec = run(engine, scenario)
    assert rec.status is RunStatus.FINISHED, rec.reason
    for st in rec.steps:
        assert st.averaged_agree() and st.ranks_agree() and st.average_is_full_batch()
        assert max(st.ranks[0].vs_full_batch.values()) <= 1e-6  # every value, by rank 0
    model = build_model(scenario).double()  # independent: one process, float64, no DDP
    x = torch.tensor(scenario.x, dtype=torch.float64).unsqueeze(1)
    y = torch.tensor(scenario.y, dtype=torch.float64).unsqueeze(1)
    nn.functional.mse_loss(model(x), y).backward()
    for name, p in model.named_parameters():
        got = tensor_norm(rec.steps[0].ranks[0].averaged[name])
        assert got == pytest.approx(float(p.grad.norm()), rel=1e-6), name
