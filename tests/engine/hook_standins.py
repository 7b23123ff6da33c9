"""Stand-ins for what DDP hands a comm hook, for driving the capture hook in this process: a
bucket (its index, parameters and flat buffer), a process group of a given size, and the work
an asynchronous all-reduce returns, already done."""

from __future__ import annotations

import torch


class Bucket:
    """What the hook asks of DDP's GradBucket: its index, parameters and flat buffer."""

    def __init__(self, index: int, params: list[torch.Tensor]) -> None:
        self._index, self._params = index, params
        self._buffer = torch.cat([p.grad.flatten() for p in params])

    def index(self) -> int:
        return self._index

    def parameters(self) -> list[torch.Tensor]:
        return self._params

    def buffer(self) -> torch.Tensor:
        return self._buffer


class Group:
    def __init__(self, size: int) -> None:
        self._size = size

    def size(self) -> int:
        return self._size


class Work:
    def __init__(self, result: torch.Tensor) -> None:
        self.fut: torch.futures.Future = torch.futures.Future()
        self.fut.set_result([result])

    def get_future(self) -> torch.futures.Future:
        return self.fut
