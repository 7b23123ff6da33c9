"""The reducer's words on the not-averaged stage: its first two sentences and the one naming
the parameters, word for word, with "…" where sentences are left out (pure; the expected
texts are written out by hand from the recorded error)."""

from __future__ import annotations

import json

from ddp_viz.kinds.not_averaged.scene import excerpt
from tests.conftest import DATA


def recorded_errors() -> dict[int, str]:
    lines = (DATA / "not-averaged-unused.jsonl").read_text().splitlines()
    found = [json.loads(ln) for ln in lines if '"error":"Expected' in ln]
    return {d["rank"]: d["error"] for d in found}


def test_the_recorded_error_keeps_two_sentences_and_the_parameters() -> None:
    errors = recorded_errors()
    assert sorted(errors) == [0, 1]
    for rank, error in errors.items():
        assert excerpt(error) == (
            "Expected to have finished reduction in the prior iteration before starting a new "
            "one. This error indicates that your module has parameters that were not used in "
            f"producing loss. … Parameter indices which did not receive grad for rank {rank}: "
            "6 7."
        )


def test_an_error_without_the_parameters_keeps_its_first_two_sentences() -> None:
    assert excerpt("One went. Two came.\nThree left. Four") == "One went. Two came."
    assert excerpt("Only one sentence") == "Only one sentence."
    assert excerpt("Ends with a stop.") == "Ends with a stop."
    assert excerpt("A. B. C did not receive grad here. D did not receive grad too") == (
        "A. B. … C did not receive grad here."
    )


def test_the_named_sentence_must_come_after_the_first_two() -> None:
    # a sentence naming the parameters among the first two is kept once, in its place
    assert excerpt("X did not receive grad. Y. Z") == "X did not receive grad. Y."
