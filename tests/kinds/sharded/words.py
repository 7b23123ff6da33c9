"""What the sharded stage calls things, written out by hand for the tests to expect (never
imported from the code under test, so a renamed way or a swapped short name fails them)."""

WAYS = ("ddp", "zero", "fsdp")
LABELS = {"ddp": "DDP", "zero": "DDP + ZeRO-1", "fsdp": "FSDP2"}
PHASES = ("holds", "forward", "backward", "step")
SHORT = {"all_reduce": "AR", "broadcast": "bcast", "all_gather": "AG", "reduce_scatter": "RS"}
LONG = {
    "all_reduce": "all-reduce",
    "broadcast": "broadcast",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
}
