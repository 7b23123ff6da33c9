"""Big tensors into summaries (engine): the numpy path against torch's, value for value."""

from __future__ import annotations

import math
import threading
import zlib

import pytest
import torch

from ddp_viz.engine.tensors import _WIDE, _summary_torch, encode, encode_all


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_summaries_match_a_float64_computation_and_the_bytes(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    tensors = [torch.randn(256, 256, dtype=dtype), torch.randn(300, dtype=dtype) * 1e-3]
    for t in tensors:
        got = encode(t)
        wide = t.double().flatten()
        assert got["shape"] == list(t.shape)
        assert got["norm"] == pytest.approx(float(wide.norm()), rel=1e-12)
        assert got["mean"] == pytest.approx(float(wide.mean()), rel=1e-9, abs=1e-15)
        assert got["absmax"] == float(wide.abs().max())
        assert got["sample"] == t.flatten()[:8].tolist()
        # the digest is the CRC-32 of the tensor's bytes, as the torch path hashed them
        assert got["digest"] == f"{zlib.crc32(t.contiguous().numpy().tobytes()):08x}"
        assert got["digest"] == _summary_torch(t, True)["digest"]


def test_a_reused_buffer_never_leaks_one_tensor_into_the_next() -> None:
    big, small = torch.full((70_000,), 3.0), torch.full((100,), -1.0)
    first = encode(big)
    second = encode(small)  # widened into the front of the same buffer
    assert first["norm"] == pytest.approx(3.0 * math.sqrt(70_000))
    assert second["norm"] == pytest.approx(10.0) and second["mean"] == -1.0
    assert encode(big)["norm"] == first["norm"]


def test_dtypes_numpy_cannot_hold_take_torchs_path() -> None:
    t = torch.linspace(-1, 1, 100, dtype=torch.bfloat16)
    got = encode(t)
    assert got["norm"] == pytest.approx(float(t.double().norm()), rel=1e-12)
    assert got["digest"] == _summary_torch(t, True)["digest"]


def test_small_tensors_stay_lists_and_local_gradients_go_without_digest() -> None:
    assert encode(torch.tensor([[1.5], [2.5]])) == [1.5, 2.5]
    assert "digest" not in encode(torch.ones(65), digest=False)


def test_a_huge_tensor_is_widened_into_a_temporary_not_the_kept_buffer() -> None:
    """A watched script's big embedding must not leave gigabytes held in its process."""
    huge = torch.ones(_WIDE.KEEP_UP_TO + 1)
    assert encode(huge)["norm"] == pytest.approx(math.sqrt(huge.numel()))
    kept = getattr(_WIDE._local, "buf", None)
    assert kept is None or kept.size <= _WIDE.KEEP_UP_TO


def test_threads_encoding_at_once_each_get_their_own_buffer() -> None:
    results: dict[int, float] = {}

    def work(i: int) -> None:
        t = torch.full((50_000,), float(i + 1))
        for _ in range(20):
            results[i] = encode(t)["mean"]
            assert results[i] == float(i + 1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == {i: float(i + 1) for i in range(4)}


@pytest.mark.parametrize("keep", [1400, _WIDE.KEEP_UP_TO])
def test_an_events_tensors_summarised_together_each_match_their_own_values(
    monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    """One pass over every big tensor of an event: each summary still describes its own tensor
    alone (no values from its neighbours), in the caller's order, also when the tensors are
    split over several passes to keep the kept buffer small."""
    # kept at 1400 values: passes of big+wide, huge alone, last+tail; else all in one pass
    monkeypatch.setattr(_WIDE, "KEEP_UP_TO", keep)
    torch.manual_seed(1)
    tensors = {
        "big": torch.randn(30, 20),
        "small": torch.tensor([1.0, -2.0]),
        "wide": torch.randn(700, dtype=torch.float64) + 5.0,
        "bf16": torch.linspace(-1, 1, 100, dtype=torch.bfloat16),
        "huge": torch.randn(1500) * 3.0,  # above the kept size: a pass of its own
        "last": -torch.rand(65),
        "tail": torch.randn(80, dtype=torch.float16),
    }
    got = encode_all(tensors)
    assert list(got) == list(tensors)
    assert got["small"] == [1.0, -2.0]
    for name, t in tensors.items():
        if name == "small":
            continue
        wide = t.double().flatten()
        summary = got[name]
        assert summary["shape"] == list(t.shape)
        assert summary["norm"] == pytest.approx(float(wide.norm()), rel=1e-12)
        assert summary["mean"] == pytest.approx(float(wide.mean()), rel=1e-9)
        assert summary["absmax"] == float(wide.abs().max())
        assert summary["sample"] == t.flatten()[:8].tolist()
        assert summary == encode(t)
    assert "digest" not in encode_all(tensors, digest=False)["big"]
