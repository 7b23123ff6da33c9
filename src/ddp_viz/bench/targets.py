"""What each figure of ``ddp-viz bench`` should be (the report prints each beside it)."""

TARGETS = {
    "cold_ratio_8": ("cold 8 ranks ÷ naive", "≤ 0.35"),
    "warm_2_s": ("warm Run → first averaged gradient, 2 ranks", "< 0.15 s"),
    "warm_8_s": ("warm Run → first averaged gradient, 8 ranks", "< 0.4 s"),
    "gui_ratio": ("GUI first paint ÷ bare window", "≤ 1.3"),
    "stream_p99_ms": ("streaming p99 frame interval", "< 25 ms"),
    "stream_dropped": ("streaming: events sent but not received", "≤ 0"),
    "overhead_ratio": ("DDP step with capture hook ÷ without, Linear", "≤ 2"),
    "pipeline_ratio_2": ("run --json ÷ bare DDP loop, Linear, 2 ranks", "≤ 1.5"),
    "pipeline_ratio_4": ("run --json ÷ bare DDP loop, Linear, 4 ranks", "≤ 1.5"),
    "pipeline_ratio_8": ("run --json ÷ bare DDP loop, Linear, 8 ranks", "≤ 1.5"),
    "mlp_ratio_2": ("run --json ÷ bare DDP loop, buckets MLP, 2 ranks", "≤ 1.2"),
    "mlp_ratio_4": ("run --json ÷ bare DDP loop, buckets MLP, 4 ranks", "≤ 1.2"),
    "pipeline_over_floor_2": ("run --json ÷ bare loop + Python hooks, Linear, 2 ranks", "≤ 1.2"),
    "pipeline_over_floor_4": ("run --json ÷ bare loop + Python hooks, Linear, 4 ranks", "≤ 1.2"),
    "pipeline_over_floor_8": ("run --json ÷ bare loop + Python hooks, Linear, 8 ranks", "≤ 1.2"),
    "mlp_over_floor_2": ("run --json ÷ bare loop + Python hooks, buckets MLP, 2 ranks", "≤ 1.3"),
    "window_ratio": ("window run ÷ headless, per step", "≤ 1.2"),
    "window_p99_ratio": ("window frame p99 ÷ bare Qt timer p99", "≤ 2"),
}
