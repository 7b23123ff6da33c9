"""The all-reduce lesson's listing is the ring that ran, checked line by line.

The listing writes the ring as two loops (reduce-scatter, then all-gather: the code view lights
each half on its own); the engine runs them as one loop whose `ring_move(step, rank, N)` picks
the chunks (`# listing: ring` in kinds/collective/engine.py). So the listing is checked two
ways: each index it writes is evaluated for every world size, rank and step and must be the
chunk `ring_move` picks, and each statement of a loop's body, its names replaced by the
engine's, must be a statement of the engine's loop, in order."""

from __future__ import annotations

import re

import pytest

from ddp_viz.kinds.collective.model import ring_move
from ddp_viz.model import listings
from ddp_viz.model.course import load_lesson

LESSON = load_lesson("all-reduce")
# the listing's names -> the engine's expressions for the same tensor or rank
ENGINE_NAMES = {
    "send": "chunks[move.send]",
    "mine": "chunks[move.receive]",
    "got": "incoming",
    "req": "request",
    "right": "move.to",
    "left": "move.source",
}


def _loops(listing: str) -> dict[str, list[str]]:
    lines = listing.splitlines()
    rs = next(i for i, t in enumerate(lines) if "# reduce-scatter" in t)
    ag = next(i for i, t in enumerate(lines) if "# all-gather" in t)
    end = next(i for i, t in enumerate(lines) if i > ag and t and not t.startswith(" "))
    return {"reduce-scatter": lines[rs + 1 : ag], "all-gather": lines[ag + 1 : end]}


def _index(body: list[str], name: str) -> str:
    found = [re.match(rf"\s*{name} = chunks\[(.+)\]", line) for line in body]
    (match,) = [m for m in found if m]
    return match.group(1)


def index_problems(listing: str) -> list[str]:
    """Where an index the listing writes is not the chunk the engine's schedule picks."""
    loops = _loops(listing)
    ring = next(t for t in listing.splitlines() if t.startswith("right, left ="))
    problems = []
    for world in range(2, 9):
        for rank in range(world):
            names = {"rank": rank, "N": world}
            right, left = eval(ring.split("=", 1)[1], {}, names)
            for half, first in (("reduce-scatter", 0), ("all-gather", world - 1)):
                for s in range(world - 1):
                    move = ring_move(first + s, rank, world)
                    at = {**names, "s": s}
                    shown = {
                        "send": eval(_index(loops[half], "send"), {}, at),
                        "mine": eval(_index(loops[half], "mine"), {}, at),
                    }
                    want = {"send": move.send, "mine": move.receive}
                    if shown != want or (right, left) != (move.to, move.source):
                        problems.append(f"{half}, N={world}, rank {rank}, s={s}: {shown} {want}")
    return problems


def statement_problems(listing: str) -> list[str]:
    """Each loop's body in the engine's names, against the engine's loop, in order."""
    (engine,) = [
        found["ring"]
        for found in [listings.regions(listings.engine_files("collective"))]
        if "ring" in found
    ]
    problems = []
    for half, body in _loops(listing).items():
        moves = [line for line in body if not re.match(r"\s*(send|mine) = chunks\[", line)]
        text = "\n".join(moves)
        for ours, theirs in ENGINE_NAMES.items():
            text = re.sub(rf"\b{ours}\b", theirs, text)
        text += "\n# left out: the indices, checked by index_problems"
        problems += [f"{half}: {p}" for p in listings.check(text, engine, half)]
    return problems


def test_every_index_the_listing_writes_is_the_chunk_the_ring_moved() -> None:
    assert index_problems(LESSON.code) == []


def test_every_statement_of_the_loops_is_the_engine_s() -> None:
    assert statement_problems(LESSON.code) == []


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("    send = chunks[(rank - s) % N]", "    send = chunks[(rank + s) % N]"),
        ("    mine = chunks[(rank - s) % N]", "    mine = chunks[(rank - s + 1) % N]"),
        (
            "right, left = (rank + 1) % N, (rank - 1) % N",
            "right, left = (rank - 1) % N, (rank + 1) % N",
        ),
    ],
)
def test_an_index_the_ring_did_not_use_fails(line, wrong) -> None:
    assert line in LESSON.code.splitlines()
    assert index_problems(LESSON.code.replace(line, wrong, 1))


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("    mine += got  # add the neighbour's", "    mine -= got  # add the neighbour's"),
        ("    mine.copy_(got)  # take the finished sum", "    mine.add_(got)  # take the sum"),
        ("    dist.recv(got, left)", "    dist.recv(got, right)"),
    ],
)
def test_a_statement_the_ring_did_not_run_fails(line, wrong) -> None:
    assert line in LESSON.code.splitlines()
    assert statement_problems(LESSON.code.replace(line, wrong, 1))
