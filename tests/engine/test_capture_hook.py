"""The capture comm hook's own bookkeeping, in this process: no ranks, no process group.

A stand-in bucket (what ``dist.GradBucket`` answers) and a stand-in ``all_reduce`` that sums
as three ranks would: rank 1's and rank 2's buffers are given, this rank's is the bucket's. So
what the hook records is checked against numbers worked out here: which names each bucket
holds, its bytes at float64 (8 a value, not 4), the copy sent and the average that came back,
the spans, the observer's calls, and nothing copied at a step without values.
"""

from __future__ import annotations

import pytest
import torch

from ddp_viz.engine import capture as capture_module
from ddp_viz.engine.capture import Capture, _allreduce, _hook
from tests.engine.hook_standins import Bucket, Group, Work


class _Observer:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def launched(self, index: int, at: float) -> None:
        self.calls.append(("launched", index, at))

    def returned(self, index: int) -> None:
        self.calls.append(("returned", index))


# the other two ranks' contributions, already divided by the world size as theirs would be
OTHERS = [torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.5, 4.0, -5.0])]


@pytest.fixture
def three_ranks(monkeypatch):  # type: ignore[no-untyped-def]
    """``all_reduce`` as the sum over three ranks: the bucket's buffer plus the others' third."""
    seen: list[dict] = []

    def all_reduce(buffer, group=None, async_op=False):  # type: ignore[no-untyped-def]
        seen.append({"group": group, "async_op": async_op, "sent": buffer.clone()})
        for other in OTHERS:
            buffer.add_(other[: buffer.numel()] / 3)
        return Work(buffer)

    monkeypatch.setattr(capture_module.dist, "all_reduce", all_reduce)
    return seen


def _params(dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    w = torch.zeros(2, 1, dtype=dtype, requires_grad=True)
    b = torch.zeros(1, dtype=dtype, requires_grad=True)
    w.grad = torch.tensor([[3.0], [6.0]], dtype=dtype)
    b.grad = torch.tensor([9.0], dtype=dtype)
    return {"0.weight": w, "0.bias": b}


def _capture(params: dict[str, torch.Tensor], **kw) -> Capture:  # type: ignore[no-untyped-def]
    return Capture(names={id(p): n for n, p in params.items()}, process_group=Group(3), **kw)


def test_the_hook_divides_by_the_world_size_then_sums_and_reads_the_average(three_ranks) -> None:
    params = _params()
    cap = _capture(params)
    bucket = Bucket(0, [params["0.bias"], params["0.weight"]])  # DDP's order, not the model's
    out = _hook(cap, bucket).wait()
    # this rank's 9, 3, 6 divided by 3, plus the others' thirds
    want = [9 / 3 + (0.5 + 1.5) / 3, 3 / 3 + (-1.0 + 4.0) / 3, 6 / 3 + (2.0 - 5.0) / 3]
    assert out.tolist() == pytest.approx(want)
    (call,) = three_ranks
    assert call["async_op"] is True and isinstance(call["group"], Group)
    assert call["sent"].tolist() == pytest.approx([3.0, 1.0, 2.0])  # divided before it went
    # named by identity, each split to its own shape
    assert cap.local["0.bias"].tolist() == [9.0]
    assert cap.local["0.weight"].tolist() == [[3.0], [6.0]]
    assert cap.averaged["0.bias"].tolist() == pytest.approx([want[0]])
    assert cap.averaged["0.weight"].shape == (2, 1)
    assert cap.averaged["0.weight"].flatten().tolist() == pytest.approx(want[1:])
    assert cap.buckets == {0: ["0.bias", "0.weight"]}


@pytest.mark.parametrize(("dtype", "size"), [(torch.float64, 8), (torch.float32, 4)])
def test_a_buckets_span_says_its_names_bytes_and_when_it_went_and_came_back(
    three_ranks, dtype, size
) -> None:
    params = _params(dtype)
    seen = _Observer()
    cap = _capture(params, observer=seen)
    _hook(cap, Bucket(1, [params["0.weight"]])).wait()
    _hook(cap, Bucket(0, [params["0.bias"]])).wait()
    assert list(cap.bucket_spans) == [1, 0] and cap.fired == [1, 0]
    first, second = cap.bucket_spans[1], cap.bucket_spans[0]
    assert first["index"] == 1 and first["params"] == ["0.weight"]
    assert first["bytes"] == 2 * size and second["bytes"] == size
    for span in (first, second):
        assert span["finished"] is not None and span["finished"] >= span["launched"]
    assert cap.allreduce_spans == [
        [first["launched"], first["finished"]],
        [second["launched"], second["finished"]],
    ]
    assert seen.calls == [
        ("launched", 1, first["launched"]),
        ("returned", 1),
        ("launched", 0, second["launched"]),
        ("returned", 0),
    ]


def test_a_step_without_values_copies_nothing_but_still_times_its_buckets(three_ranks) -> None:
    params = _params()
    cap = _capture(params, values=False)
    out = _hook(cap, Bucket(0, [params["0.weight"], params["0.bias"]])).wait()
    want = [3 / 3 + (0.5 + 1.5) / 3, 6 / 3 + (-1 + 4) / 3, 9 / 3 + (2 - 5) / 3]
    assert out.tolist() == pytest.approx(want)
    assert cap.local == {} and cap.averaged == {}
    assert cap.bucket_spans[0]["finished"] is not None and len(cap.allreduce_spans) == 1


def test_the_copies_are_the_values_sent_not_the_buffer_the_all_reduce_changed(
    three_ranks,
) -> None:
    params = _params()
    cap = _capture(params)
    bucket = Bucket(0, [params["0.weight"], params["0.bias"]])
    _hook(cap, bucket).wait()
    # the buffer itself now holds the average; the local copy kept what this rank had
    assert cap.local["0.weight"].flatten().tolist() == [3.0, 6.0]
    assert bucket.buffer().tolist() != [3.0, 6.0, 9.0]
    # a later step reuses the buffers: the new values, not the old ones
    cap.reset()
    params["0.weight"].grad = torch.tensor([[30.0], [60.0]], dtype=torch.float64)
    _hook(cap, Bucket(0, [params["0.weight"], params["0.bias"]])).wait()
    assert cap.local["0.weight"].flatten().tolist() == [30.0, 60.0]
    assert cap.local["0.bias"].tolist() == [9.0]


def test_reset_forgets_the_step_and_keeps_the_fired_list_the_loop_holds(three_ranks) -> None:
    params = _params()
    cap = _capture(params)
    fired = cap.fired
    _hook(cap, Bucket(0, [params["0.weight"]])).wait()
    cap.on_grad_ready("0.weight")
    cap.reset()
    assert fired is cap.fired and fired == []
    assert (cap.local, cap.averaged, cap.buckets) == ({}, {}, {})
    assert (cap.allreduce_spans, cap.ready, cap.bucket_spans) == ([], [], {})


def test_ready_lists_each_gradient_in_the_order_it_was_accumulated() -> None:
    cap = Capture(names={})
    for name in ("2.bias", "2.weight", "0.bias"):
        cap.on_grad_ready(name)
    assert [n for n, _ in cap.ready] == ["2.bias", "2.weight", "0.bias"]
    times = [t for _, t in cap.ready]
    assert times == sorted(times)


def test_copies_pair_each_fired_bucket_with_what_it_sent_and_got_back(three_ranks) -> None:
    params = _params()
    cap = _capture(params)
    _hook(cap, Bucket(1, [params["0.bias"]])).wait()
    _hook(cap, Bucket(0, [params["0.weight"]])).wait()
    (i1, sent1, got1), (i0, sent0, got0) = cap.copies()
    assert (i1, i0) == (1, 0)
    assert sent1["0.bias"].tolist() == [9.0]
    assert got1["0.bias"].tolist() == pytest.approx([9 / 3 + (0.5 + 1.5) / 3])
    assert sent0["0.weight"].flatten().tolist() == [3.0, 6.0]
    assert got0["0.weight"].flatten().tolist() == pytest.approx(
        [3 / 3 + (0.5 + 1.5) / 3, 6 / 3 + (-1.0 + 4.0) / 3]
    )


def test_a_bucket_whose_average_never_came_back_pairs_with_nothing(monkeypatch) -> None:
    params = _params()
    cap = _capture(params)
    pending: torch.futures.Future = torch.futures.Future()

    class _Never:
        def get_future(self) -> torch.futures.Future:
            return pending

    monkeypatch.setattr(capture_module.dist, "all_reduce", lambda *a, **k: _Never())
    _hook(cap, Bucket(0, [params["0.weight"]]))
    ((index, sent, got),) = cap.copies()
    assert index == 0 and sent["0.weight"].flatten().tolist() == [3.0, 6.0] and got == {}
    assert cap.bucket_spans[0]["finished"] is None and cap.allreduce_spans == []


def test_the_world_group_is_used_when_the_hook_was_given_none(monkeypatch) -> None:
    used = []

    def all_reduce(buffer, group=None, async_op=False):  # type: ignore[no-untyped-def]
        used.append(group)
        return Work(buffer)

    monkeypatch.setattr(capture_module.dist, "all_reduce", all_reduce)
    world = Group(4)
    monkeypatch.setattr(capture_module.dist, "group", type("G", (), {"WORLD": world}))
    buffer = torch.tensor([8.0, -4.0])
    out = _allreduce(None, buffer).wait()
    assert used == [world] and out[0].tolist() == [2.0, -1.0]  # divided by the world's 4
