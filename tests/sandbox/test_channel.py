"""The parent's deadlines on every read and write of a worker's socket."""

from __future__ import annotations

import socket
import time

import pytest

from tpdisc.sandbox.channel import Channel, ReplyTooLarge
from tpdisc.sandbox.codec import frame


def soon(seconds: float = 0.2) -> float:
    return time.monotonic() + seconds


def test_a_peer_that_stops_reading_cannot_block_a_large_write() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs, pytest.raises(TimeoutError):
        Channel(ours).send(b"x" * (8 << 20), soon())


def test_a_silent_peer_cannot_block_a_read() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs, pytest.raises(TimeoutError):
        Channel(ours).recv(100, soon())


def test_a_closed_peer_is_end_of_file() -> None:
    ours, theirs = socket.socketpair()
    theirs.close()
    with ours:
        channel = Channel(ours)
        with pytest.raises(EOFError):
            channel.recv(100, soon())
        with pytest.raises(EOFError):
            channel.send(b"x" * (1 << 20), soon())


def test_frames_split_across_reads_are_reassembled_and_oversize_refused_unread() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        channel = Channel(ours)
        data = frame(b"hello") + frame(b"world") + frame(b"x" * 1000)
        theirs.sendall(data[:3])
        with pytest.raises(TimeoutError):
            channel.recv(100, soon(0.05))
        theirs.sendall(data[3:])
        assert channel.recv(100, soon()) == b"hello"
        assert channel.recv(100, soon()) == b"world"
        with pytest.raises(ReplyTooLarge) as info:
            channel.recv(100, soon())
        assert info.value.size == 1000
