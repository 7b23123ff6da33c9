"""The comm-hooks spec, its variants and PowerSGD's compression rule, pure (no torch, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.hook_compression.model import KIND, HooksSpec, compressed
from ddp_viz.model.scenario import Scenario, ScenarioError


def test_the_variants_follow_the_table() -> None:
    ids = [v.id for v in HooksSpec().variants()]
    assert ids == [
        "allreduce",
        "fp16",
        "powersgd-r1",
        "powersgd-r1-noef",
        "powersgd-r4",
        "powersgd-r4-noef",
    ]
    only = HooksSpec(ranks=(2,), error_feedback="off", fp16=False).variants()
    assert [v.id for v in only] == ["allreduce", "powersgd-r2-noef"]
    assert only[1].label == "PowerSGD r=2, no EF"


@pytest.mark.parametrize(
    ("shape", "r", "want"),
    [
        ((256, 256), 1, (256, 256, 1)),
        ((256, 16), 4, (256, 16, 4)),  # 2 · 4 · 272 = 2176 < 4096
        ((1, 256), 1, None),  # 2 · 257 ≥ 256: sent whole
        ((8, 8), 2, None),  # 2 · 2 · 16 = 64, not below 64
        ((4, 2, 3), 1, (4, 6, 1)),  # viewed as shape[0] × the rest
        ((256,), 1, None),  # a bias
        ((3, 100), 8, None),  # r is at most min(n, m) = 3: 2 · 3 · 103 ≥ 300
    ],
)
def test_powersgd_compresses_only_what_is_worth_it(shape, r, want) -> None:
    assert compressed(shape, r) == want


def test_the_table_round_trips_and_names_its_bad_fields() -> None:
    s = Scenario.from_mapping({"world_size": 2, KIND: {"steps": 12, "ranks": [1, 4]}})
    assert s.steps == 12 and not s.trains
    assert Scenario.from_mapping(s.to_dict()) == s
    for table, field in [
        ({"ranks": [1, 1]}, f"{KIND}.ranks"),
        ({"warmup": 1}, f"{KIND}.warmup"),  # PowerSGD needs 2 with error feedback or warm start
        ({"error_feedback": "maybe"}, f"{KIND}.error_feedback"),
        ({"width": 0}, f"{KIND}.width"),
    ]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping({"world_size": 2, KIND: table})
        assert err.value.field == field
    with pytest.raises(ScenarioError, match="2 ranks"):
        Scenario.from_mapping({"world_size": 1, KIND: {}})
