"""Ends the fault catalogue did not have, read by the doctor (pure: events made here, no torch):
a command that failed with no rank's word, one rank's own KeyboardInterrupt, a rank that said
its last word while its peers still waited for it, and an error every rank raised alike.
Each has its twin that must not be called so: a clean run, a user's stop, a clean end, an
error one rank raised."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import doctoring, findings, rank_ends, verdict
from ddp_viz.kinds.watched.diagnosis import rank_states
from ddp_viz.kinds.watched.doctor import frame_file, running_frame
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchSummary,
)
from ddp_viz.model import protocol
from tests.watch.made_runs import run

GONE = "Connection closed by peer [127.0.0.1]:7566"
HEALTHY = "ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found"
ALL_REDUCE = {"seq": 8, "op": "all_reduce", "site": "t.py:20 in main", "bucket": 0, "step": 7}


def raised(rank: int, at: float, kind: str, message: str, step: int = 4, **kw: object):
    return WatchFailure(1, rank, step, at, kind, message, f"t.py:{30 + rank} in main", **kw)  # type: ignore[arg-type]


def last_words(steps: dict[int, int]) -> list[WatchDropped]:
    return [WatchDropped(1, r, 0, steps=n) for r, n in steps.items()]


def said(rec) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(line for _, lines in findings(rec) for line in lines)


def test_a_command_that_failed_with_no_ranks_word_is_never_a_clean_bill() -> None:
    # mp.spawn catches the rank's exception itself: every rank's last word, then status 1
    rec = run(*last_words({0: 5, 1: 5, 2: 5}), WatchSummary(1, 1))
    assert "✗ the command exited with status 1, yet no rank reported an error" in said(rec)
    assert "torch.multiprocessing.spawn" in said(rec)
    assert verdict(rec) == (
        "ddp-viz verdict: the command exited with status 1 with no rank's failure seen "
        "(see the command's own output)"
    )
    # the same run with status 0, or stopped by the user: nothing to say
    assert verdict(run(*last_words({0: 5, 1: 5, 2: 5}), WatchSummary(1, 0))) == HEALTHY
    stopped = run(*last_words({0: 5, 1: 5, 2: 5}), WatchSummary(1, 1, stopped=True))
    assert verdict(stopped) == HEALTHY and said(stopped) == ""
    # a rank's own failure explains the status: no second line about it
    crashed = run(raised(2, 1.0, "ValueError", "bad"), WatchSummary(1, 1))
    assert "yet no rank reported" not in said(crashed)


def test_one_ranks_own_keyboard_interrupt_is_the_cause_not_the_peers_it_left() -> None:
    events = [
        raised(2, 5.0, "KeyboardInterrupt", ""),
        raised(0, 5.1, "RuntimeError", GONE, inside=ALL_REDUCE),
        raised(1, 5.2, "RuntimeError", GONE, inside=ALL_REDUCE),
        WatchExit(1, 2, 42, -2, "SIGINT"),
    ]
    rec = run(*events, WatchSummary(1, 1))
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2 is the root cause: KeyboardInterrupt at t.py:32 in main, in its "
        "step 4 (loop index 3) or after it, before it began any later step"
    )
    first = said(rec).splitlines()[0]
    assert first.startswith("✗ crash: rank 2 raised KeyboardInterrupt — at t.py:32 in main")
    # the user's Ctrl-C reaches every rank: those are the stop, no crash
    every = [raised(r, 5.0 + r, "KeyboardInterrupt", "") for r in range(3)]
    assert verdict(run(*every, WatchSummary(1, 1, stopped=True))) == HEALTHY


def test_a_rank_that_ended_while_its_peers_waited_for_it_is_the_cause() -> None:
    # rank 2 ran a forward under no_grad: one all-reduce short, it ended after its 8 forwards
    # while ranks 0 and 1 waited in step 8's all-reduce, then lost it
    events = [
        *last_words({2: 8}),
        raised(0, 7.0, "RuntimeError", GONE, step=8, inside=ALL_REDUCE),
        raised(1, 7.1, "RuntimeError", GONE, step=8, inside=ALL_REDUCE),
    ]
    rec = run(*events, WatchSummary(1, 1))
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2 is the root cause: it ended its training cleanly (its last "
        "word, after beginning 8 step(s)) while the others still waited for it in step 8's "
        "all-reduce"
    )
    lines = said(rec).splitlines()
    assert lines[0].startswith("✗ crash: rank 2 ended its training cleanly")
    assert "a forward under no_grad, a skipped backward" in lines[0]
    assert lines[1].endswith("connection closed by a peer, because rank 2 had left")
    assert rank_states(rec) == {2: "failed", 0: "stopped", 1: "stopped"}
    # a clean run where every rank ended: nobody left anybody
    assert verdict(run(*last_words({0: 8, 1: 8, 2: 8}), WatchSummary(1, 0))) == HEALTHY
    # a rank's own error is the cause, whoever else ended cleanly
    own = run(*last_words({2: 8}), raised(0, 7.0, "ValueError", "bad"), WatchSummary(1, 1))
    assert verdict(own).startswith("ddp-viz verdict: rank 0 is the root cause: ValueError")
    assert [r.rank for r in rank_ends(own)] == [0]


def test_an_error_every_rank_raised_at_one_line_is_the_scripts() -> None:
    def name_error(rank: int, site: str = "t.py:12 in <module>") -> WatchFailure:
        message = "name 'learnig_rate' is not defined"
        return WatchFailure(1, rank, 0, 1.0 + rank / 10, "NameError", message, site)

    rec = run(name_error(2), name_error(0), name_error(1), WatchSummary(1, 1))
    assert verdict(rec) == (
        "ddp-viz verdict: every rank raised NameError at t.py:12 in <module>, before its first "
        "step: the script's own error, not one rank's"
    )
    assert said(rec).startswith("✗ crash: every rank raised NameError")
    assert rank_states(rec) == {0: "failed", 1: "failed", 2: "failed"}  # none stopped by another
    assert "(the same error on all 3 ranks, so the script's own: the cause)" in said(rec)
    # two of three, or the third at another line: one rank is still the first
    two = run(name_error(2), name_error(0), WatchSummary(1, 1))
    assert verdict(two).startswith("ddp-viz verdict: rank 0 is the root cause: NameError")
    apart = run(name_error(2), name_error(0), name_error(1, "t.py:13 in <module>"))
    assert verdict(apart).startswith("ddp-viz verdict: rank 0 is the root cause: NameError")


def test_a_rank_blocked_in_the_standard_library_is_named_at_the_scripts_line() -> None:
    stack = [
        "train.py:42 in <module>: sys.exit(main())",
        "train.py:33 in main: x, y = q.get()",
        "queue.py:171 in get: self.not_empty.wait()",
        "threading.py:327 in wait: waiter.acquire()",
    ]
    place = {"rank": 2, "state": "outside", "quiet_s": 3.0, "stack": stack}
    assert running_frame(place) == (  # type: ignore[arg-type]
        "train.py:33 in main: x, y = q.get() (inside threading.py:327 in wait: waiter.acquire())"
    )
    # the script's own innermost frame is said alone
    assert running_frame({**place, "stack": stack[:2]}) == "train.py:33 in main: x, y = q.get()"  # type: ignore[arg-type]
    # a helper file of the script's, known from where it issued a collective, counts as its
    last = {"seq": 3, "op": "barrier", "site": "data.py:8 in load"}
    deep = [*stack[:2], "data.py:9 in load: time.sleep(1)"]
    assert running_frame({**place, "stack": deep, "last": last}).startswith("data.py:9")  # type: ignore[arg-type]
    # ... and so does the file of the collective it is inside, with no earlier one
    inside = {"seq": 4, "op": "all_reduce", "site": "data.py:8 in load"}
    assert running_frame({**place, "stack": [*deep, stack[2]], "inside": inside}) == (  # type: ignore[arg-type]
        "data.py:9 in load: time.sleep(1) (inside queue.py:171 in get: self.not_empty.wait())"
    )
    # a stack whose innermost frame is no file's line is said as it came, that frame alone
    native = [*stack[:3], "<built-in method acquire>"]
    assert running_frame({**place, "stack": native}) == "<built-in method acquire>"  # type: ignore[arg-type]
    assert running_frame({**place, "stack": []}) == ""  # type: ignore[arg-type]


def test_a_frames_file_is_all_before_its_line_number_even_with_a_colon_in_its_name() -> None:
    assert frame_file("train.py:33 in main: x, y = q.get()") == "train.py"
    assert frame_file("run:v2.py:7 in <module>: main()") == "run:v2.py"
    assert frame_file("a.py:1 in f: d = {1: 2}") == "a.py"
    assert frame_file("<built-in method acquire>") == "<built-in method acquire>"
    # the script's own file with a colon in its name is still the script's: its line is said
    stack = [
        "run:v2.py:7 in <module>: main()",
        "run:v2.py:5 in main: q.get()",
        "queue.py:171 in get: self.not_empty.wait()",
    ]
    place = {"rank": 1, "state": "outside", "quiet_s": 3.0, "stack": stack}
    assert running_frame(place) == (  # type: ignore[arg-type]
        "run:v2.py:5 in main: q.get() (inside queue.py:171 in get: self.not_empty.wait())"
    )


# what torch 2.13's DataLoader re-raised in the main process for a worker's ValueError
WORKER = (
    "Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent call "
    'last):\n  File "/v/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", line '
    "374, in _worker_loop\n    data = fetcher.fetch(index)\n"
    '  File "/v/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 54, in '
    "<listcomp>\n    data = [self.dataset[idx] for idx in possibly_batched_index]\n"
    '  File "/home/me/shards.py", line 26, in __getitem__\n    raise ValueError(f"corrupt '
    'record {i}")\n  File "/usr/lib/python3.11/json/decoder.py", line 355, in raw_decode\n'
    "    raise JSONDecodeError\nValueError: corrupt record 12 in shard 2\n"
)


def test_a_data_loader_workers_error_is_said_at_its_own_line_not_the_loaders() -> None:
    rec = run(raised(2, 1.0, "ValueError", WORKER), raised(0, 1.2, "RuntimeError", GONE))
    first = said(rec).splitlines()[0]
    assert first.startswith(
        "✗ crash: rank 2 raised ValueError: corrupt record 12 in shard 2 — at shards.py:26 in "
        "__getitem__ in DataLoader worker process 0 (its main process re-raised it at t.py:32 "
        "in main), in its step 4"
    ), first
    assert verdict(rec).startswith(
        "ddp-viz verdict: rank 2 is the root cause: ValueError at shards.py:26 in __getitem__ "
        "in DataLoader worker process 0, in its step 4"
    )
    # a message that only looks like one keeps the rank's own words and line
    plain = run(raised(2, 1.0, "ValueError", "Caught ValueError in my loader."))
    assert verdict(plain).startswith(
        "ddp-viz verdict: rank 2 is the root cause: ValueError at t.py:32"
    )


# --- the edges of the rules above (each a mutant of them that otherwise lived) ---------------
def test_the_left_ranks_words_in_full_and_with_no_step_to_name() -> None:
    events = [*last_words({2: 8}), raised(0, 7.0, "RuntimeError", GONE, step=8, inside=ALL_REDUCE)]
    assert said(run(*events, WatchSummary(1, 1))).splitlines()[0] == (
        "✗ crash: rank 2 ended its training cleanly (its last word, after beginning 8 step(s)) "
        "while the others still waited for it in step 8's all-reduce: a rank that leaves its "
        "loop early, or makes fewer all-reduces than its peers (a forward under no_grad, a "
        "skipped backward), leaves them waiting (the first failure: the cause)"
    )
    # torchrun's SIGTERMs alone, no rank's own word: no step to name
    stopped = [WatchExit(1, 0, 40, -15, "SIGTERM"), WatchExit(1, 1, 41, -15, "SIGTERM")]
    rec = run(*last_words({2: 0}), *stopped, WatchSummary(1, 1))
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2 is the root cause: it ended its training cleanly (its last "
        "word, after beginning 0 step(s)) while the others still waited for it in a collective"
    )


def test_a_rank_with_a_bad_status_or_signal_after_its_last_word_never_left_cleanly() -> None:
    gone = [raised(0, 7.0, "RuntimeError", GONE, step=8, inside=ALL_REDUCE)]
    # SIGINT after its last word (its KeyboardInterrupt, not reported): killed, not left
    rec = run(*last_words({2: 8}), *gone, WatchExit(1, 2, 42, -2, "SIGINT"), WatchSummary(1, 1))
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: killed by SIGINT")
    assert "SIGINT: interrupted (Ctrl-C to it alone, or a KeyboardInterrupt it raised)" in said(rec)
    # the user's stop: status 0, nothing to name
    rec = run(
        *last_words({2: 8}), WatchExit(1, 2, 42, -2, "SIGINT"), WatchSummary(1, 1, stopped=True)
    )
    assert verdict(rec) == HEALTHY
    # a SIGKILL after its last word is the launcher's teardown: it left the others waiting
    rec = run(*last_words({2: 8}), *gone, WatchExit(1, 2, 42, -9, "SIGKILL"), WatchSummary(1, 1))
    assert [r.end.value for r in rank_ends(rec)] == ["raised"]


def test_an_error_of_one_rank_of_one_or_both_of_two() -> None:
    one = WatchFailure(1, 0, 0, 1.0, "NameError", "x", "t.py:1 in <module>")
    rec = run(one, world=1)
    assert verdict(rec).startswith("ddp-viz verdict: rank 0 is the root cause: NameError")
    both = run(one, WatchFailure(1, 1, 0, 1.1, "NameError", "x", "t.py:1 in <module>"), world=2)
    assert verdict(both).startswith("ddp-viz verdict: every rank raised NameError")
    # the message is the rank's own: only the head's "rank 0 raised" becomes "every rank"
    said_twice = "rank 0 raised it"
    echo = [WatchFailure(1, r, 0, 1.0 + r, "ValueError", said_twice, "t.py:1 in f") for r in (0, 1)]
    assert "every rank raised ValueError: rank 0 raised it — at" in said(run(*echo, world=2))


def test_the_unexplained_exit_in_full_and_only_when_nothing_else_explains_it() -> None:
    rec = run(*last_words({0: 5, 1: 5}), WatchSummary(1, 2), world=2)
    assert (
        "exit",
        [
            "✗ the command exited with status 2, yet no rank reported an error, a signal or a lost "
            "connection: what started the ranks may have caught a rank's exception itself "
            "(torch.multiprocessing.spawn does, and exits the rank with status 1), or the command "
            "failed outside its ranks; its own output above says what"
        ],
    ) in findings(rec)
    hang = WatchHang(1, 12.0, 10.0, [{"rank": 0, "state": "outside", "quiet_s": 12.0}])
    hung = run(hang, WatchSummary(1, 1), world=2)
    assert [key for key, _ in findings(hung)] == ["hang0"]  # the hang says why it failed


def test_a_rank_whose_last_word_came_is_done_though_a_hang_saw_it_in_a_barrier() -> None:
    barrier = {"seq": 5, "op": "barrier", "site": "t.py:40 in main"}
    inside = {"seq": 5, "op": "all_reduce", "site": "t.py:20 in main", "bucket": 0, "step": 4}
    places = [
        {"rank": 0, "state": "inside", "quiet_s": 3.0, "step": 5, "inside": inside},
        {"rank": 1, "state": "inside", "quiet_s": 3.0, "step": 4, "inside": barrier},
    ]
    rec = run(*last_words({1: 4}), WatchHang(1, 3.0, 2.0, places), world=2)
    assert verdict(rec) == (
        "ddp-viz verdict: uneven inputs: rank 0 entered step 5 after rank 1 finished 4 steps"
    )


def test_worker_errors_from_other_installs_and_without_frames() -> None:
    def worker(*frames: str, last: str = "ValueError: bad") -> str:
        head = "Caught ValueError in DataLoader worker process 1.\nOriginal Traceback (most recent"
        body = "".join(f'  File "{path}", line 1, in f\n    x()\n' for path in frames)
        return f"{head} call last):\n{body}{last}\n"

    def at(message: str) -> str:
        return verdict(run(raised(2, 1.0, "ValueError", message))).split(" at ", 1)[1]

    windows = worker("C:\\env\\data.py", "C:\\env\\Lib\\site-packages\\PIL\\Image.py")
    assert at(windows).startswith("data.py:1 in f in DataLoader worker process 1,")
    assert at(worker("data.py")).startswith("data.py:1 in f in DataLoader worker process 1,")
    assert at(worker()).startswith("?:0 in ? in DataLoader worker process 1,")
    # the loader's first line alone is no worker's traceback: the rank's own line stands
    assert at("Caught ValueError in DataLoader worker process 1.").startswith("t.py:32 in main,")


def test_a_stopped_commands_keyboard_interrupts_never_reach_the_record(monkeypatch) -> None:
    """The window shows the record as events come: between the ranks' KeyboardInterrupts and
    the command's summary it would read as a crash of the user's own stop."""
    from ddp_viz.kinds.watched.watch import command

    interrupted = raised(0, 1.0, "KeyboardInterrupt", "")
    recorder = command.Recorder(None)
    recorder(protocol.RunStarted(1, 3, 0, {"watched": True}, params=[]))
    monkeypatch.setitem(command.STOPPED, "by_user", True)
    recorder(interrupted)
    recorder(raised(1, 1.1, "ValueError", "bad"))  # a rank's own error still counts
    assert [f.type for f in doctoring(recorder.rec).failures] == ["ValueError"]
    monkeypatch.setitem(command.STOPPED, "by_user", False)
    recorder(interrupted)  # no stop: one rank's own KeyboardInterrupt is its failure
    assert [f.type for f in doctoring(recorder.rec).failures] == ["ValueError", "KeyboardInterrupt"]
