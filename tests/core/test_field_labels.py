"""The form's words for a field and a choice, as the quiz's prompts and the form's messages say
them: the core's names, a kind's own, and the key itself for a field the form does not show."""

from __future__ import annotations

from ddp_viz.model.dataspec import PLACEMENT_LABELS, PLACEMENTS
from ddp_viz.model.field_labels import choice_label, field_label


def test_a_field_is_named_by_the_core_then_by_its_kind_then_by_its_key() -> None:
    assert field_label("world_size") == "World size"
    assert field_label("ddp.bucket_cap_mb") == "Bucket (MiB)"
    assert field_label("uneven.join") == "Join"  # the uneven kind's, as its check box says
    assert field_label("train.no_sync") == "no_sync()"  # accumulation's row
    assert field_label("train.accumulate") == "Micro-batches"
    assert field_label("hook_compression.width") == "Hidden width"
    assert field_label("ddp.static_graph") == "ddp.static_graph"  # not on the form
    assert field_label("ddp.static_graph", unnamed="static_graph") == "static_graph"
    assert field_label("world_size", unnamed="x") == "World size"


def test_a_choice_is_said_as_the_form_lists_it_and_nothing_else_is() -> None:
    assert set(PLACEMENT_LABELS) == set(PLACEMENTS)  # every placement has its word
    assert choice_label("train.no_sync", "backward_only") == "backward only"
    assert choice_label("train.no_sync", "forward_and_backward") == "fwd + backward"
    assert choice_label("train.no_sync", "none") == "none"
    assert choice_label("train.no_sync", "never") is None  # not one of the form's choices
    assert choice_label("train.no_sync", True) is None
    assert choice_label("train.no_sync", ["backward_only"]) is None  # a list: no choice, no error
    assert choice_label("train.loss_reduction", "backward_only") is None  # not a choice field
