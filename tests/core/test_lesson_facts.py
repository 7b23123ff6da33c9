"""The lessons say what the code does: checks that tie lesson text to the code and to torch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddp_viz.model.course import load_course

ENGINE = Path(__file__).parents[2] / "src" / "ddp_viz" / "engine"
COURSE = load_course()


def test_the_timeout_the_lesson_names_is_the_one_the_ranks_use() -> None:
    rank_py = (ENGINE / "rank.py").read_text()
    seconds = int(re.search(r"PG_TIMEOUT = timedelta\(seconds=(\d+)\)", rank_py).group(1))
    assert f"this app's runs use {seconds} seconds" in COURSE.get("ddp-pattern").markdown


TRAINING = [lesson for lesson in COURSE.lessons if lesson.trains]  # DDP runs, with a hook


@pytest.mark.parametrize("lesson", TRAINING, ids=lambda lesson: lesson.id)
def test_dimmed_lines_are_ddp_vizs_own_instrumentation(lesson) -> None:
    lines = lesson.code.splitlines()
    dimmed = [lines[n - 1] for n in lesson.dim]
    assert any("register_comm_hook" in line for line in dimmed)
    assert all("ddp-viz" in line or "hook" in line for line in dimmed)
    undimmed = [line for i, line in enumerate(lines, 1) if i not in lesson.dim]
    assert not any("register_comm_hook" in line for line in undimmed)


@pytest.mark.parametrize("lesson", TRAINING, ids=lambda lesson: lesson.id)
def test_the_backward_line_is_what_the_all_reduce_highlights(lesson) -> None:
    lines = lesson.code_with(None).splitlines()
    marked = [lines[n - 1].strip().split("#")[0].strip() for n in lesson.lines_for("allreduce")]
    assert marked and all(line.endswith(".backward()") for line in marked), marked
    assert len(marked) == 1 or lesson.id == "accumulate-with-no-sync"  # one per no_sync branch
    if lesson.scene == "ddp_step":  # the buckets scene's last phase measures backward's overlap
        assert lines[lesson.lines_for("step")[0] - 1].strip().startswith("optimizer.step()")


def test_no_sync_is_taught_as_the_forward_inside_the_block() -> None:
    # the accumulation lesson teaches no_sync (the first lesson's quiz no longer asks it early)
    lesson = COURSE.get("accumulate-with-no-sync")
    for qid in ("what-no-sync-does", "backward-only"):
        q = next(q for q in lesson.questions if q.id == qid)
        assert "forward" in q.choices[q.answer].lower() or "forward" in q.explain.lower()
    assert "forward" in lesson.markdown and "no_sync" in lesson.markdown


def test_the_lesson_never_prints_the_answer_it_asks_to_predict() -> None:
    lesson = COURSE.get("ddp-pattern")
    assert "33.17" not in lesson.markdown and "33.1" not in lesson.markdown
    q = next(q for q in lesson.questions if q.kind == "predict")
    assert q.quantity.world_size == 3


def test_the_lesson_says_ddp_divides_before_it_sums() -> None:
    lesson = COURSE.get("ddp-pattern")
    assert (
        "divides" in lesson.phase_text["allreduce"]
        and "then sums" in lesson.phase_text["allreduce"]
    )


def test_the_installed_torch_divides_first_as_the_lesson_says() -> None:
    from importlib.util import find_spec

    spec = find_spec("torch")
    hooks = Path(spec.origin).parent / "distributed/algorithms/ddp_comm_hooks/default_hooks.py"
    source = hooks.read_text()
    assert "Apply the division first to avoid overflow" in source
    fut = source[source.index("def _allreduce_fut") :]
    assert fut.index("tensor.div_(") < fut.index("dist.all_reduce(")


def _ddp_source() -> str:
    from importlib.util import find_spec

    spec = find_spec("torch")
    return (Path(spec.origin).parent / "nn/parallel/distributed.py").read_text()


def test_the_installed_ddp_starts_with_one_bucket_and_rebuilds_once_as_the_lesson_says() -> None:
    source = _ddp_source()
    assert "put all params in one bucket initially" in source
    assert "self.reducer._rebuild_buckets()" in source
    assert "This should be called only once during whole training period" in source
    text = COURSE.get("buckets").markdown
    assert "_rebuild_buckets()" in text and "one bucket" in text


def test_the_first_bucket_is_small_only_when_the_cap_is_left_out() -> None:
    import torch.distributed as dist

    source = _ddp_source()
    assert "dist._DEFAULT_FIRST_BUCKET_BYTES if is_using_default else bucket_bytes_cap" in source
    assert "_DEFAULT_BUCKET_CAP_MB = 25" in source
    assert dist._DEFAULT_FIRST_BUCKET_BYTES == 1024 * 1024
    text = " ".join(COURSE.get("buckets").markdown.split())
    assert "DDP's default is 25 MiB" in text and "kept to 1 MiB" in text


def test_the_buckets_lesson_code_marks_the_cap_it_runs_with() -> None:
    lesson = COURSE.get("buckets")
    from ddp_viz.model.scenario import Scenario

    scenario = Scenario.load(lesson.scenario_file)
    cap = scenario.ddp.bucket_cap_mb
    lines = lesson.code_with(scenario.to_dict()).splitlines()
    other = lesson.code_with(scenario.with_changes(ddp={"bucket_cap_mb": 0.25}).to_dict())
    assert "DDP(model, bucket_cap_mb=0.25, ...)" in other  # the listing follows the run shown
    marked = [lines[n - 1] for n in lesson.lines_for("shards")]
    assert any(f"DDP(model, bucket_cap_mb={cap:g}, ...)" in line for line in marked)


def test_the_buckets_lesson_never_gives_away_its_prediction() -> None:
    lesson = COURSE.get("buckets")
    q = next(q for q in lesson.questions if q.kind == "predict")
    assert q.quantity.what == "buckets" and q.quantity.bucket_cap_mb == 0.25
    text = " ".join(lesson.markdown.split()).lower()
    for telling in ("three buckets", "3 buckets", "0.25 gives"):
        assert telling not in text
    assert "three" not in " ".join(lesson.phase_text.values()).lower()


def test_the_installed_distributed_sampler_does_what_the_data_lesson_says() -> None:
    from importlib.util import find_spec

    spec = find_spec("torch")
    source = (Path(spec.origin).parent / "utils/data/distributed.py").read_text()
    assert "g.manual_seed(self.seed + self.epoch)" in source  # set_epoch reshuffles
    assert "indices += indices[:padding_size]" in source  # pads by repeating the first rows
    assert "indices[self.rank : self.total_size : self.num_replicas]" in source  # interleaves
    text = " ".join(COURSE.get("who-splits-the-data").markdown.split())
    assert "seed + epoch" in text and "indices[rank::num_replicas]" in text
    assert "repeats the first two indices" in text


def test_the_installed_ddp_decides_in_the_forward_as_the_no_sync_lesson_says() -> None:
    import inspect

    from torch.nn.parallel import DistributedDataParallel as DDP

    doc = " ".join(inspect.getdoc(DDP.no_sync).split())
    assert "The forward pass should be included inside the context manager" in doc
    assert "require_backward_grad_sync = False" in inspect.getsource(DDP.no_sync)
    # the reducer is prepared in the forward, and only while the flag is set
    post = inspect.getsource(DDP._post_forward)
    guard = post.index("if torch.is_grad_enabled() and self.require_backward_grad_sync:")
    assert guard < post.index("self.reducer.prepare_for_backward")
    text = " ".join(COURSE.get("accumulate-with-no-sync").markdown.split())
    assert "require_backward_grad_sync" in text and "reads that flag **in the forward**" in text
    assert "reducer.prepare_for_backward" in text


def test_the_all_reduce_lesson_dims_only_the_reference_and_marks_each_move() -> None:
    lesson = COURSE.get("all-reduce")
    lines = lesson.code_with(None).splitlines()
    dimmed = [lines[n - 1] for n in lesson.dim]
    assert dimmed[0].startswith("# ddp-viz only") and any("dist.all_reduce" in d for d in dimmed)
    assert not any(
        "dist.all_reduce(" in line for i, line in enumerate(lines, 1) if i not in lesson.dim
    )
    marked = {p: [lines[n - 1].strip() for n in lesson.lines_for(p)] for p in lesson.highlight}
    assert all(m.startswith(("send", "mine")) for m in marked["shards"])
    assert marked["allreduce"][0].startswith("mine += got")  # reduce-scatter adds
    assert marked["allreduce"][1].startswith("mine.copy_(got)")  # all-gather copies
    # what the lesson says gloo does is what its sources were read to say
    text = " ".join(lesson.markdown.split())
    assert "falls through to its ring" in text and "ships only the compiled library" in text
    import torch

    assert torch.__version__.startswith("2.13") and "torch 2.13 installed here" in text
