"""DDP's own errors in words that name the parameter (pure: torch 2.13's messages as the
reducer writes them, no torch): each error said in full, the parameters named up to six and
counted past that, the step before as the page numbers it, a shape from the message and each
peer's, and the rank whose model differs by the ranks' votes, ties and 2 or 3 ranks alike."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.ddp_errors import ddp_error, model_culprit
from ddp_viz.kinds.watched.events import WatchFailure

# torch/csrc/distributed/c10d/reducer.cpp, as libtorch_cpu.so of torch 2.13 holds them
UNUSED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing loss."
)
STATIC = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. Your training graph has changed in this iteration, e.g., one parameter is used in "
    "first iteration, but then got unused in the second iteration. this is not compatible with "
    "static_graph set to True."
)
TWICE = (
    "Expected to mark a variable ready only once. This error is caused by one of the following "
    "reasons: 1) Use of a module parameter outside the `forward` function."
)
NOT_DDP = "CUDA out of memory. Tried to allocate 2.00 GiB"


def failure(rank: int, message: str, step: int = 5, **kw: object) -> WatchFailure:
    return WatchFailure(
        1, rank, step, 1.0 + rank, "RuntimeError", message, f"t.py:{10 + rank} in main", **kw
    )  # type: ignore[arg-type]


UNUSED_FIX = (
    "fix: use them in the loss every step, or DDP(..., find_unused_parameters=True); "
    "static_graph=True if the same ones are unused every step"
)


def test_unused_parameters_are_named_with_the_step_before_as_the_page_numbers_it() -> None:
    f = failure(2, UNUSED, step=5, no_grad=["aux.weight", "aux.bias"])
    assert ddp_error(f) == [
        "DDP: aux.weight, aux.bias got no gradient in step 4: not used in producing the loss, so "
        "their bucket's all-reduce never ran and DDP refuses to start the next step",
        UNUSED_FIX,
    ]
    # in step 2 the step before is 1; in step 1 (the error raised as the first began) still 1
    assert "got no gradient in step 1:" in ddp_error(failure(2, UNUSED, 2, no_grad=["w"]))[0]
    assert "got no gradient in step 1:" in ddp_error(failure(2, UNUSED, 1, no_grad=["w"]))[0]
    # the watch did not see which: said so
    assert ddp_error(failure(2, UNUSED)) == [
        "DDP: some parameters got no gradient in the step before: not used in producing the "
        "loss, so their bucket's all-reduce never ran and DDP refuses to start the next step",
        UNUSED_FIX,
    ]


def test_six_parameters_are_named_and_more_are_counted() -> None:
    six = [f"p{i}" for i in range(6)]
    said = ddp_error(failure(0, UNUSED, no_grad=six))[0]
    assert said.startswith("DDP: p0, p1, p2, p3, p4, p5 got no gradient in step 4:")
    said = ddp_error(failure(0, UNUSED, no_grad=[*six, "p6"]))[0]
    assert said.startswith("DDP: p0, p1, p2, p3, p4, p5 and 1 more got no gradient in step 4:")
    said = ddp_error(failure(0, UNUSED, no_grad=[*six, "p6", "p7", "p8"]))[0]
    assert said.startswith("DDP: p0, p1, p2, p3, p4, p5 and 3 more got no gradient")


def test_a_graph_that_changed_under_static_graph_is_said_as_such() -> None:
    fix = (
        "fix: DDP(..., find_unused_parameters=True) instead of static_graph, or use the same "
        "parameters every step"
    )
    assert ddp_error(failure(1, STATIC, no_grad=["head.weight"])) == [
        "DDP: the set of parameters that get a gradient changed between steps (head.weight got "
        "none in the step before), which static_graph=True forbids",
        fix,
    ]
    assert ddp_error(failure(1, STATIC)) == [
        "DDP: the set of parameters that get a gradient changed between steps, which "
        "static_graph=True forbids",
        fix,
    ]


def test_a_gradient_marked_ready_twice_is_said_with_its_two_usual_causes() -> None:
    assert ddp_error(failure(1, TWICE)) == [
        "DDP: a parameter got its gradient twice in one backward (a module used twice under "
        "reentrant checkpointing, or a parameter used outside forward)",
        "fix: torch.utils.checkpoint(..., use_reentrant=False), or DDP(..., static_graph=True) "
        "if the graph is the same every step",
    ]


def test_any_other_error_is_not_ddps() -> None:
    assert ddp_error(failure(1, NOT_DDP)) == []
    assert ddp_error(failure(1, NOT_DDP), [failure(0, NOT_DDP)]) == []


def sizes(i: int, shape: str) -> str:
    return (
        f"[2]: params[{i}] in this process with sizes [{shape}] appears not to match sizes of "
        "the same param in process 0."
    )


PARAMS = [{"name": "0.weight", "shape": [8, 6]}, {"name": "0.bias", "shape": [8]}]
ODD = [{"name": "0.weight", "shape": [9, 6]}, {"name": "0.bias", "shape": [9]}]
SIZES_FIX = "fix: build the same model on every rank (no rank-dependent sizes)"


def test_a_parameter_whose_shape_differs_is_named_with_each_peers_shape() -> None:
    # ranks 0 and 1 built 8×6, rank 2 (the odd one, last) 9×6: each peer whose shape differs
    # from this rank's is named, in rank order whatever order they reported in
    mine = failure(2, sizes(0, "9, 6"), step=0, params=ODD)
    peers = [
        failure(1, "gone", step=0, params=PARAMS),
        mine,
        failure(0, "x", step=0, params=PARAMS),
    ]
    assert ddp_error(mine, peers) == [
        "DDP: the model differs between ranks: rank 2's 0.weight has shape [9×6], rank 0's "
        "[8×6], rank 1's [8×6]",
        SIZES_FIX,
    ]
    # a peer with the same shape is not named
    same = failure(1, "gone", step=0, params=ODD)
    said = ddp_error(mine, [failure(0, "x", step=0, params=PARAMS), same, mine])[0]
    assert said.endswith("rank 2's 0.weight has shape [9×6], rank 0's [8×6]")
    # no peer's shapes known: rank 0's, unnamed
    assert ddp_error(mine)[0] == (
        "DDP: the model differs between ranks: rank 2's 0.weight has shape [9×6], rank 0's another"
    )


def test_a_parameter_past_the_list_the_rank_sent_is_named_by_its_index() -> None:
    f = failure(2, sizes(2, "4"), step=0, params=ODD)  # two parameters sent, the third named
    assert ddp_error(f, [f, failure(0, "x", step=0, params=PARAMS)]) == [
        "DDP: the model differs between ranks: rank 2's parameter #2 has shape [4], rank 0's "
        "another",
        SIZES_FIX,
    ]
    f = failure(2, sizes(1, "9"), step=0, params=ODD)  # the last one sent
    assert ddp_error(f, [failure(0, "x", step=0, params=PARAMS)])[0].startswith(
        "DDP: the model differs between ranks: rank 2's 0.bias has shape [9], rank 0's [8]"
    )


def count(me: int, other: int, mine: int, theirs: int) -> str:
    return (
        f"DDP expects same model across all ranks, but Rank {me} has {mine} params, while rank "
        f"{other} has inconsistent {theirs} params."
    )


def test_a_count_of_parameters_that_differs_is_said_with_both_counts() -> None:
    assert ddp_error(failure(2, count(0, 2, 14, 12))) == [
        "DDP: the model differs between ranks: rank 0 has 14 parameters, rank 2 has 12",
        "fix: build the same model on every rank (no rank-dependent layers)",
    ]


def test_the_rank_named_inconsistent_most_is_the_odd_one() -> None:
    votes = [
        failure(0, count(0, 2, 4, 2)),
        failure(1, count(1, 2, 4, 2)),
        failure(2, count(2, 0, 2, 4)),
    ]
    assert model_culprit(votes, 3) == 2
    # one vote each: a tie, no culprit
    assert model_culprit([failure(0, count(0, 1, 4, 2)), failure(1, count(1, 0, 2, 4))], 2) is None
    # two named twice, one once: still a tie at the top
    tie = [
        failure(0, count(0, 2, 4, 2)),
        failure(1, count(1, 2, 4, 2)),
        failure(2, count(2, 0, 2, 4)),
        failure(3, count(3, 0, 2, 4)),
        failure(4, count(4, 1, 2, 4)),
    ]
    assert model_culprit(tie, 5) is None
    assert model_culprit([*tie[:4], failure(4, count(4, 2, 2, 4))], 5) == 2
    assert model_culprit([failure(0, NOT_DDP)], 3) is None and model_culprit([], 3) is None


@pytest.mark.parametrize(
    ("ranks", "world", "odd"),
    [
        ([1, 2], 3, 0),  # every rank but 0 says so, at 3 ranks: rank 0 is the odd one
        ([1, 2, 3], 4, 0),
        ([2], 3, 2),  # one rank says so: it is
        ([1], 2, 1),  # 2 ranks: rank 1 is all that can say it, and is named
        ([1, 2], 4, 1),  # rank 3 said nothing: the first that did
        ([2, 1], 3, 0),  # reported in any order
    ],
)
def test_the_ranks_whose_sizes_differ_from_process_0s(
    ranks: list[int], world: int, odd: int
) -> None:
    failures = [failure(r, sizes(0, "8, 6"), step=0) for r in ranks]
    assert model_culprit([*failures, failure(0, "gone", step=0)], world) == odd
