"""The rank's side of the handshake (sockets on 127.0.0.1, no torch): a listener whose
challenge comes late, as from a listener sharing two busy cores with eight starting ranks, is
still answered. The connect's short timeout is for finding no listener at all, not for the
challenge: with it, five of eight ranks gave up and went unwatched."""

from __future__ import annotations

import socket
import threading

from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.watch import sender as sender_module
from ddp_viz.kinds.watched.watch.sender import Sender
from tests.watch.test_watch_listener import TOKEN, hello


def test_a_late_challenge_is_still_answered(monkeypatch) -> None:
    monkeypatch.setattr(sender_module, "CONNECT_S", 0.05)
    server = socket.create_server(("127.0.0.1", 0))
    answered: list[bytes] = []
    nonces: list[str] = []
    late = threading.Event()  # never set: its wait is the delay

    def listener() -> None:
        conn, _ = server.accept()
        with conn:
            # the challenge, well past the connect's timeout: the stimulus, not a wait
            late.wait(0.5)
            line, nonce = wire.challenge(0.0)
            nonces.append(nonce)
            conn.sendall(line.encode() + b"\n")
            answered.append(conn.makefile("rb").readline())

    thread = threading.Thread(target=listener)
    thread.start()
    port = server.getsockname()[1]
    sender = Sender(f"127.0.0.1:{port}", TOKEN, lambda: hello(0))
    thread.join(10)
    server.close()
    sender.close()
    assert answered and answered[0], sender.error
    assert wire.check_answer(answered[0], TOKEN, nonces[0]).rank == 0
