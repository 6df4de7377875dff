"""Hostile case: connecting to a listener on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tests.sandbox.helpers import fail_calls, protocol, wait_for


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on 127.0.0.1 recording every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except TimeoutError:
                continue
            accepted.append(addr)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        server.close()


def test_tcp_connection_to_loopback_is_refused(listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    share = f"""
    socket = sys.modules['socket']
    connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connection.connect(('127.0.0.1', {port}))
    """
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("PermissionError: [Errno 1] Operation not permitted (line ")
    # A control connection from here proves the listener was up and counting.
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert wait_for(lambda: len(accepted) == 1)
    assert len(accepted) == 1


@pytest.mark.parametrize(
    "share",
    [
        "s = sys.modules['socket'].socket(sys.modules['socket'].AF_INET, "
        "sys.modules['socket'].SOCK_DGRAM)",
        "s = sys.modules['socket'].socket(sys.modules['socket'].AF_UNIX)",
        "s = sys.modules['socket'].socketpair()",
    ],
)
def test_no_socket_of_any_family_can_be_made(share: str) -> None:
    err = fail_calls(protocol(share), "crash")
    assert err.reason.startswith("PermissionError: [Errno 1] Operation not permitted (line ")
