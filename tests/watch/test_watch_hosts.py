"""Two "machines": network namespaces joined by a veth pair, with addresses this test assigns.
torchrun runs one rank in each (--nnodes 2, a c10d rendezvous across them), each under
``ddp-viz watch --remote``, and both stream to one ``ddp-viz listen``. The second machine's
clock is set 1000 s ahead; the recording must put both on the listener's clock. All traffic
stays inside the namespaces; they are removed afterwards, whatever happens."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.timeline import record

pytestmark = [pytest.mark.gloo, pytest.mark.netns]

SCRIPT = Path(__file__).parents[1] / "data" / "watched" / "train.py"
BIN = Path(sys.executable).parent
SKEW_S = 1000.0


def sh(*args: str, ns: str | None = None, **kw) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    cmd = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=30, **kw)


@pytest.fixture
def two_hosts() -> Iterator[list[tuple[str, str, str]]]:
    """[(namespace, address, interface)] for two namespaces on one veth link."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = uuid.uuid4().hex[:6]
    hosts = [
        (f"ddpviz-{tag}-a", "10.231.7.1", f"dva{tag}"),
        (f"ddpviz-{tag}-b", "10.231.7.2", f"dvb{tag}"),
    ]
    made = []
    try:
        for ns, _, _ in hosts:
            sh("ip", "netns", "add", ns)
            made.append(ns)
        (_, _, if_a), (_, _, if_b) = hosts
        sh("ip", "link", "add", if_a, "type", "veth", "peer", "name", if_b)
        for ns, addr, iface in hosts:
            sh("ip", "link", "set", iface, "netns", ns)
            sh("ip", "addr", "add", f"{addr}/24", "dev", iface, ns=ns)
            sh("ip", "link", "set", iface, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        yield hosts
    finally:
        for ns in made:
            for pid in subprocess.run(
                ["ip", "netns", "pids", ns], capture_output=True, text=True
            ).stdout.split():
                os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], check=False)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert tag not in left, left


def free_port(ns: str, addr: str) -> int:
    code = f"import socket; s = socket.socket(); s.bind(('{addr}', 0)); print(s.getsockname()[1])"
    return int(sh(sys.executable, "-c", code, ns=ns).stdout)


@pytest.mark.slow
def test_two_machines_stream_to_one_listener_on_one_clock(two_hosts, tmp_path) -> None:
    (ns_a, addr_a, _), _ = two_hosts
    rec_path = tmp_path / "two-hosts.jsonl"
    listen = subprocess.Popen(
        ["ip", "netns", "exec", ns_a, str(BIN / "ddp-viz"), "listen", "--no-window",
         "--bind", f"{addr_a}:0", "--record", str(rec_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        first, second = listen.stdout.readline(), listen.stdout.readline()
        where = re.search(r"DDP_VIZ_ADDR=(\S+) DDP_VIZ_TOKEN=(\S+)", first + second)
        assert where, first + second
        addr, token = where.groups()
        assert addr.startswith(addr_a + ":")
        rdzv = f"{addr_a}:{free_port(ns_a, addr_a)}"
        nodes = []
        for node, (ns, host_addr, iface) in enumerate(two_hosts):
            env = {
                **os.environ,
                "DDP_VIZ_ADDR": addr,
                "DDP_VIZ_TOKEN": token,
                "DDP_VIZ_HOST": f"host-{'ab'[node]}",
                "DDP_VIZ_CLOCK_SKEW_S": str(SKEW_S * node),
                "GLOO_SOCKET_IFNAME": iface,
                "DDP_VIZ_BUDGET": "1",  # every step in full
                "OMP_NUM_THREADS": "1",
            }
            cmd = [
                "ip", "netns", "exec", ns, str(BIN / "ddp-viz"), "watch", "--remote", "--",
                str(BIN / "torchrun"), "--nnodes", "2", "--nproc-per-node", "1",
                "--node-rank", str(node), "--local-addr", host_addr,
                "--rdzv-backend", "c10d", "--rdzv-endpoint", rdzv,
                "--rdzv-id", "two-hosts", "--rdzv-conf", f"is_host={node == 0}",
                str(SCRIPT), "--epochs", "1",
            ]  # fmt: skip
            nodes.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True))
        for node in nodes:
            _, err = node.communicate(timeout=180)
            assert node.returncode == 0, err
    finally:
        listen.send_signal(signal.SIGINT)
        _, err = listen.communicate(timeout=30)
    assert listen.returncode == 0, err
    events = [protocol.decode(line) for line in rec_path.read_text().splitlines()]
    joined = {e.rank: e for e in events if e.kind == "watched_rank"}
    assert {r: e.host for r, e in joined.items()} == {0: "host-a", 1: "host-b"}
    assert abs(joined[0].clock_offset_s) < 0.5
    assert abs(joined[1].clock_offset_s - SKEW_S) < 0.5  # measured, within the round trip
    rec = record(events)
    steps = rec.complete_steps()
    assert len(steps) == 4 and all(st.averaged_agree() for st in steps)
    # an all-reduce is one collective: on one clock, the two ranks' spans of it overlap
    # (each offset is known to within half its round trip: the hello's answer may have been
    # stamped anywhere inside it, and a busy machine makes that trip long)
    slack = 0.05 + (joined[0].round_trip_s + joined[1].round_trip_s) / 2
    for st in steps:
        a, b = (st.ranks[r].spans["allreduce"][0] for r in (0, 1))
        assert a[0] < b[1] + slack and b[0] < a[1] + slack, (st.step, a, b, slack)
