"""The collectives a rank issues, observed where torch issues them.

While a way steps, the rank's ``torch.distributed.all_reduce``, ``broadcast``,
``all_gather_single`` and ``reduce_scatter_single`` are wrapped (FSDP2's ``DefaultAllGather``
and ``DefaultReduceScatter`` call the last two through the module, ZeRO's ``_sync_params``
broadcasts each parameter from its owner, DDP's comm hook here is PyTorch's own
``allreduce_hook``). A wrapper notes the tensors, the bytes, and when the call started and
ended (an asynchronous one ends when its work completes). FSDP's parameters in a call are read
from the ``fsdp_params`` its own functions hold on the stack.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ddp_viz.kinds.sharded.model import Way, layer_of

WRAPPED = {  # torch.distributed's function: the op's word
    "all_reduce": "all_reduce",
    "broadcast": "broadcast",
    "all_gather_single": "all_gather",
    "reduce_scatter_single": "reduce_scatter",
}
Collective = Callable[..., object]  # one of torch.distributed's functions above
Sampler = Callable[[str, int], None]  # FSDP's replica: (where, extra bytes being gathered)


@dataclass
class Call:
    op: str
    phase: str
    tensors: list[str]
    bytes_in: int
    bytes_out: int
    start: float
    end: float = -1.0
    src: int = -1


class Recorder:
    """The collectives of the way that is stepping (none while ``way`` is None)."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.lock = threading.Lock()
        self.way: Way | None = None
        self.phase = "forward"
        self.calls: list[Call] = []
        self.t0 = 0.0
        self.bucket: list[str] = []  # the names in DDP's bucket being all-reduced
        self.names: dict[int, str] = {}  # data_ptr → name, for ZeRO's broadcasts
        self.sampler: Sampler | None = None  # FSDP's gathered bytes

    def begin(self, way: Way) -> None:
        self.way, self.calls, self.phase, self.t0 = way, [], "forward", time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    @contextmanager
    def paused(self) -> Iterator[None]:
        way, self.way = self.way, None
        try:
            yield
        finally:
            self.way = way

    def names_of(self, op: str, tensor: torch.Tensor) -> list[str]:
        if op == "all_reduce":
            return list(self.bucket)
        if op == "broadcast":
            return [self.names.get(tensor.data_ptr(), "?")]
        frame = sys._getframe(3)
        while frame is not None:  # FSDP's foreach_all_gather / foreach_reduce hold them
            params = frame.f_locals.get("fsdp_params")
            if params is not None:
                return [p._param_fqn for p in params]
            frame = frame.f_back
        return ["?"]


def size_of(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _entry(rec: Recorder, op: str, a: dict[str, object]) -> Call:
    """What a call of ``op`` with bound arguments ``a`` hands in and gets back."""
    if op in ("all_gather", "reduce_scatter"):
        inp = a.get("input_tensor", a.get("input"))
        out = a.get("output_tensor", a.get("output"))
        assert isinstance(inp, torch.Tensor) and isinstance(out, torch.Tensor)
        sizes, tensor, src = (size_of(inp), size_of(out)), inp, -1
    else:
        tensor = a["tensor"]
        assert isinstance(tensor, torch.Tensor)
        raw = a.get("src", -1) if op == "broadcast" else -1
        src = raw if isinstance(raw, int) else -1
        n = size_of(tensor)
        sizes = (n, n) if op == "all_reduce" else (n * (src == rec.rank), n * (src != rec.rank))
    return Call(op, rec.phase, rec.names_of(op, tensor), *sizes, rec.now(), src=src)


def _wrapper(rec: Recorder, name: str, original: Collective) -> Collective:
    op = WRAPPED[name]
    signature = inspect.signature(original)

    def call(*args: object, **kwargs: object) -> object:
        if rec.way is None:
            return original(*args, **kwargs)
        a = signature.bind(*args, **kwargs).arguments
        entry = _entry(rec, op, a)
        if rec.sampler is not None and op == "all_gather":  # its output is being filled
            layer = layer_of(entry.tensors[0])
            rec.sampler(f"{rec.phase}, all-gathering {layer}", entry.bytes_out)
        with rec.lock:
            rec.calls.append(entry)
        result = original(*args, **kwargs)
        if a.get("async_op") and isinstance(result, dist.Work):

            def done(_: object) -> None:
                with rec.lock:
                    entry.end = rec.now()

            result.get_future().add_done_callback(done)
        else:
            entry.end = rec.now()
        return result

    return call


@contextmanager
def recording(rec: Recorder) -> Iterator[Recorder]:
    originals: dict[str, Collective] = {name: getattr(dist, name) for name in WRAPPED}
    for name, original in originals.items():
        setattr(dist, name, _wrapper(rec, name, original))
    try:
        yield rec
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)
