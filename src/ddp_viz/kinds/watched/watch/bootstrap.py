"""Loaded by the watched command's ``sitecustomize``: patch DDP once torch defines it.

An import hook waits for ``torch.nn.parallel.distributed`` (``import torch`` brings it in)
and patches its class right after the module has run; until then nothing of torch is imported
here, so processes that never use torch (``torchrun``'s launcher, tools) pay nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

TARGET = "torch.nn.parallel.distributed"
# torchrun's bookkeeping of its workers' exits, and its workers' start and stop (in the
# launcher's process): see .launcher
ELASTIC = "torch.distributed.elastic.multiprocessing.errors"
WORKERS = "torch.distributed.elastic.multiprocessing.api"
NAMES = (TARGET, ELASTIC, WORKERS)


def _patch(name: str, module: ModuleType) -> None:
    if name == TARGET:
        from ddp_viz.kinds.watched.watch.capture import patch

        patch(module)
        return
    from ddp_viz.kinds.watched.watch import launcher

    if name == ELASTIC:
        launcher.patch(module)
    else:
        launcher.patch_workers(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.waiting = set(NAMES)

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.waiting:
            return None
        self.waiting.discard(name)
        if not self.waiting:
            sys.meta_path.remove(self)  # all patched
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            try:
                _patch(name, module)
            except Exception as exc:  # the script runs unwatched rather than not at all
                print(f"ddp-viz watch: not watching this process: {exc}", file=sys.stderr)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    finder = _Finder()
    for name in NAMES:
        if name in sys.modules:  # already imported (rare): patch it now
            finder.waiting.discard(name)
            _patch(name, sys.modules[name])
    if finder.waiting:
        sys.meta_path.insert(0, finder)
