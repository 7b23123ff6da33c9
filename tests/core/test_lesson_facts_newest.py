"""The four newest lessons (launching, evaluation, comm hooks, sharded) say what torch 2.13
does: each test reads the installed torch's source as text (no torch import) and the lesson,
and pins the fact a review found the course getting wrong (issue 46)."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

from ddp_viz.model.course import load_course

COURSE = load_course()
TORCH = Path(find_spec("torch").origin).parent


def _torch(path: str) -> str:
    return (TORCH / path).read_text(encoding="utf-8")


def _question(lesson: str, qid: str):
    return next(q for q in COURSE.get(lesson).questions if q.id == qid)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def test_under_torchrun_every_rank_is_a_client_of_the_agent_s_store() -> None:
    source = _torch("distributed/rendezvous.py")
    agent = source[source.index("if _torchelastic_use_agent_store():") :]
    agent = agent[: agent.index("else:")]
    assert "is_master=False" in agent  # every rank, rank 0 included, under the agent store
    assert "start_daemon = rank == 0" in source  # by hand, rank 0 hosts it
    text = _one_line(COURSE.get("ddp-pattern").markdown)
    assert "TORCHELASTIC_USE_AGENT_STORE=True" in text
    assert "every rank, rank 0 included, connects to it as a client" in text
    assert "rank 0 opens a small key-value store" not in text
    explain = _question("ddp-pattern", "env-rendezvous").explain
    assert "torchrun's own agent hosts it" in explain and "by hand, rank 0 hosts it" in explain


def test_env_reads_four_variables_and_the_lessons_agree() -> None:
    source = _torch("distributed/rendezvous.py")
    env = source[source.index("def _env_rendezvous_handler") :]
    env = env[: env.index("register_rendezvous_handler(")]
    read = set(re.findall(r'_get_env_or_raise\("(\w+)"\)', env))
    assert read == {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}
    assert "LOCAL_RANK" not in env
    launching = _one_line(COURSE.get("ddp-pattern").markdown)
    assert "four of them: `RANK`, `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT`" in launching
    for name in ("LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "GROUP_WORLD_SIZE"):
        assert f"`{name}`" in launching
    for name in ("RESTART_COUNT", "MAX_RESTARTS", "RUN_ID", "ERROR_FILE"):
        assert f"`TORCHELASTIC_{name}`" in launching
    assert "`OMP_NUM_THREADS=1`" in launching
    assert 'os.environ["OMP_NUM_THREADS"] = str(omp_num_threads)' in _torch("distributed/run.py")
    other = _one_line(COURSE.get("not-averaged").markdown)
    assert "reads `RANK`, `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT`" in other


def test_fsdp_gathers_twice_and_the_lesson_does_not_call_it_one_all_reduce() -> None:
    source = _torch("distributed/fsdp/_fully_shard/_fully_shard.py")
    assert "reshard_after_forward if not auto_reshard_after_forward else True" in source
    lesson = COURSE.get("sharded")
    text = _one_line(lesson.markdown)
    assert "about 1.5 times DDP's bytes per step" in text
    assert "six all-gathers and three reduce-scatters" in text
    assert "second half at the next forward" not in text
    q = _question("sharded", "rs-plus-ag")
    assert q.choices[q.answer] == "About 1.5 times"
    assert not any("all-reduce's worth" in w for w in q.why_not)


def test_ddp_with_adam_holds_about_five_times_the_model() -> None:
    source = _torch("nn/parallel/distributed.py")
    assert "gradient_as_bucket_view" in source
    text = _one_line(COURSE.get("sharded").markdown)
    assert "five times the model's bytes" in text and "gradient_as_bucket_view=True" in text


def test_the_ideal_zero_share_counts_the_step_counters_too() -> None:
    """The per-rank figures include a 4-byte step per parameter; so must the ideal."""
    values = {"hidden": 4096, "inp": 1024, "out": 512, "biases": 64 + 64 + 8}
    counters = {"hidden": 1, "inp": 1, "out": 1, "biases": 3}
    per_rank = [2 * values[k] * 4 + 4 * counters[k] for k in values]
    assert per_rank == [32772, 8196, 4100, 1100]
    explain = _question("sharded", "predict-zero-state").explain
    for n in per_rank:
        assert f"{n:,}" in explain
    assert f"{sum(per_rank):,}" in explain and f"{sum(per_rank) // 4:,}" in explain
    assert "11,536" not in explain


def test_no_answer_is_in_its_own_prompt() -> None:
    zero = _question("sharded", "predict-zero-state").prompt
    assert "rank 1 gets" not in zero and "64 × 16" in zero
    powersgd = _question("comm-hooks", "predict-powersgd-bytes").prompt
    assert "compresses the" not in powersgd and "whole" not in powersgd
    params = _question("sharded", "fsdp-params-bytes")
    assert params.choices[params.answer] == "5,768"
    assert "5,768" not in params.prompt and "5768" not in params.prompt


def test_the_stock_powersgd_hook_waits_inside_its_callbacks_and_the_lesson_warns() -> None:
    source = _torch("distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py")
    assert ".get_future()\n            .wait()[0]" in source
    assert "warm_start=True," in source  # PowerSGDState's default
    text = _one_line(COURSE.get("comm-hooks").markdown)
    assert "hangs on gloo when a model has more than one bucket" in text
    assert "`warm_start=True`, the default" in text
    assert "one buffer the size of the whole bucket, per bucket" in text


def test_the_bf16_refusal_is_a_check_on_the_hook_s_name() -> None:
    source = _torch("nn/parallel/distributed.py")
    assert 'if hook.__name__ in ["bf16_compress_hook", "bf16_compress_wrapper_hook"]' in source
    text = _one_line(COURSE.get("comm-hooks").markdown)
    assert "checks the hook's *name*" in text and "cannot even register" not in text
    assert not any(q.id == "bf16-here" for q in COURSE.get("comm-hooks").questions)


def test_the_comm_hooks_lesson_says_what_fp16_s_range_does() -> None:
    source = _torch("distributed/algorithms/ddp_comm_hooks/default_hooks.py")
    assert "compressed_tensor = buffer.to(dtype).div_(world_size)" in source  # cast, then divide
    text = _one_line(COURSE.get("comm-hooks").markdown)
    assert "nothing above 65,504" in text and "a gradient of 10⁻⁸ is sent as 0" in text
    q = _question("comm-hooks", "fp16-cost")
    assert q.choices[q.answer].startswith("0:")


def test_evaluation_shows_eval_and_warns_about_per_rank_seeds_under_fsdp() -> None:
    lesson = COURSE.get("evaluation")
    assert "model.eval()" in lesson.code
    text = _one_line(lesson.markdown)
    assert "`model.eval()`" in text and "broadcasts nothing" in text
    assert "--local-ranks-filter" in text and "Nothing silences" not in text
    assert "fully_shard` broadcasts nothing" in _one_line(COURSE.get("sharded").markdown)
    assert '"--local-ranks-filter"' in _torch("distributed/run.py")
