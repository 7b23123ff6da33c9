"""The watched run's benchmarks: its overhead on a torchrun step, and its page's frames."""
