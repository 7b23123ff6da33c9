"""The listing check's own rules on listings and engines written here: where a kind's regions
are looked for and in which order, regions that nest, repeat or never end, what counts as the
same statement (`self.`, annotations, trailing commas, `${…}`, `...`), and each problem's
words."""

from __future__ import annotations

import pytest

from ddp_viz.model import listings
from ddp_viz.model.listings import ListingError, check, engine_files, regions, statements

KINDS = listings.SRC / "kinds"


def test_a_kinds_own_engine_comes_first_then_the_shared_one_then_the_others() -> None:
    files = engine_files("mixed_precision")
    own = sorted((KINDS / "mixed_precision" / "engine").glob("*.py"))
    shared = sorted((listings.SRC / "engine").glob("*.py"))
    assert files[: len(own)] == own and own
    assert files[len(own) : len(own) + len(shared)] == shared
    rest = files[len(own) + len(shared) :]
    assert rest[0] == KINDS / "accumulation" / "engine.py"
    assert KINDS / "uneven" / "engine.py" in rest
    assert not any("mixed_precision" in p.parts for p in rest)
    assert KINDS / "sharded" / "engine" / "__init__.py" in rest
    folders = [p.parent.name if p.name == "engine.py" else p.parent.parent.name for p in rest]
    assert folders == sorted(folders)  # the other kinds in their folders' order
    plain = engine_files("uneven")
    assert plain[0] == KINDS / "uneven" / "engine.py" and plain[1] == shared[0]
    assert engine_files("ddp_step")[0] == shared[0]  # no engine of its own


def write(tmp_path, text: str, name: str = "engine.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_regions_are_cut_at_their_markers_dedented_and_numbered_in_the_file(tmp_path) -> None:
    engine = write(
        tmp_path,
        "def run(self):\n"
        "    x = 0\n"
        "    # listing: first\n"
        "    for s in range(self.steps):\n"
        "        self.model.step(s,\n"
        "                        1)  # the rest\n"
        "    # end listing\n"
        "    # listing: second.part-2\n"
        "    done(x)\n"
        "    # end listing\n"
        "    # end listing\n",
    )
    found = regions([engine])
    assert list(found) == ["first", "second.part-2"]
    assert [(s.key, s.line, s.text) for s in found["first"]] == [
        ("forsinrange(steps):", 4, "for s in range(self.steps):"),
        ("model.step(s,1)", 5, "self.model.step(s,"),
    ]
    assert [(s.key, s.line) for s in found["second.part-2"]] == [("done(x)", 9)]
    other = write(tmp_path, "# listing: third\ny = 1\n# end listing\n", "other.py")
    assert list(regions([engine, other])) == ["first", "second.part-2", "third"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "# listing: a\nx = 1\n# listing: b\n# end listing\n",
            "engine.py:3: region 'b' nested or twice",
        ),
        (
            "# listing: a\n# end listing\n# listing: a\n# end listing\n",
            "engine.py:3: region 'a' nested or twice",
        ),
        ("x = 1\n# listing: a\nx = 2\n", "engine.py:2: region 'a' never ends"),
        ("# listing: a\nx = (\n# end listing\n", "line 2: not Python a listing can hold ("),
    ],
)
def test_a_region_that_nests_repeats_never_ends_or_does_not_read_is_named(
    tmp_path, text, message
) -> None:
    with pytest.raises(ListingError) as caught:
        regions([write(tmp_path, text)])
    assert str(caught.value).startswith(message)


def test_what_counts_as_the_same_statement() -> None:
    def keys(code: str) -> list[str]:
        return [s.key for s in statements(code)]

    assert keys("self.a.b = self.c\nx.self.y\nself\n") == ["a.b=c", "x.self.y", "self"]
    assert keys("model: nn.Module = make()\nx == y\nd: int\n") == ["model=make()", "x==y", "d:int"]
    assert keys("f(a, b,)\nl = [1, 2,\n]\n") == ["f(a,b)", "l=[1,2]"]
    assert keys("  a = 1  # note\n\n# only a comment\n    b = 2") == ["a=1", "b=2"]
    found = statements("a = 1\n\nb = f(\n  2)\n", first=10)
    assert [(s.line, s.text) for s in found] == [(10, "a = 1"), (12, "b = f(")]


def test_a_listing_follows_its_engine_with_placeholders_and_elisions() -> None:
    engine = statements(
        "model = DDP(model, device_ids=None, bucket_cap_mb=spec.cap)\n"
        "for epoch in range(spec.epochs):\n"
        "    loss = step(batch[0])\n"
        "log(loss)\n"
    )
    full = (
        "model = DDP(model, device_ids=None, bucket_cap_mb=${ddp.bucket_cap_mb})\n"
        "for epoch in range(${data.epochs}):\n"
        "    loss = step(batch[0])\n"
        "log(loss)"
    )
    assert check(full, engine) == []
    assert check(full.replace("${ddp.bucket_cap_mb}", "'${ddp.bucket_cap_mb}'"), engine) == []
    elided = "model = DDP(model, ...)\nfor epoch in range(${data.epochs}):\n    ...\nlog(loss)"
    assert check(elided, engine) == [
        "listing: leaves engine lines out but has no `# left out: …` comment"
    ]
    assert check(elided + "\n# left out: the step", engine) == []
    two = full.replace("${data.epochs}", "${a}, ${b}")  # a placeholder is one value, not two
    assert check(two, engine, "mine") == [
        "mine line 2: `for epoch in range(${a}, ${b}):` is not in the engine (in order)"
    ]
    assert check("log(loss)\nloss = step(batch[0])", engine) == [
        "listing line 2: `loss = step(batch[0])` is not in the engine (in order)"
    ]
    assert check("", engine) == [
        "listing: leaves engine lines out but has no `# left out: …` comment"
    ]
    assert check("", []) == []
