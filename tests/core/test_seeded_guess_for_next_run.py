"""A guess locked while the stage still shows the last run is for the next Run: scrubbing the
last run's stage to the phase that shows the value grades nothing (that run was not bound to
the guess), and the next run grades it once (the session with a fake transport and view)."""

from __future__ import annotations

import json

from ddp_viz.model.scenario import default_scenario
from tests.conftest import DATA
from tests.core.test_session import make, play, predict_question, ready, walk_stage

RUN = "uneven-3-ranks.jsonl"


def averaged_weight() -> float:
    """Rank 0's averaged weight gradient of step 1, from the raw lines."""
    for line in (DATA / RUN).read_text().splitlines():
        d = json.loads(line) if line.strip() else {}
        if d.get("event") == "averaged_grad" and d["step"] == 0 and d["rank"] == 0:
            return d["grads"]["weight"][0]
    raise AssertionError("no averaged_grad")


def test_a_guess_locked_after_a_run_waits_for_the_next_run_to_be_graded() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, RUN)  # run 1 ended; its stage has not shown the average yet
    guess = averaged_weight()
    said = s.lock_prediction(q, guess)
    assert "Now press Run" in said  # not practice: the value was not on the stage
    walk_stage(s)  # the learner scrubs run 1, the run before the guess
    assert v.called("show_prediction_graded") == []
    assert set(s.predictions) == {q.id}  # still locked for the next run
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, RUN, run_id=2)
    walk_stage(s)
    ((question, feedback, scored),) = v.called("show_prediction_graded")
    assert question is q and feedback.correct and scored
    assert s.predictions == {}
