"""ddp-viz: learn DistributedDataParallel by watching a real gloo run."""

__version__ = "0.1.0"
