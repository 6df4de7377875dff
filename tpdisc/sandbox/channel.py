"""The parent's end of a worker's socket: framed, non-blocking, every operation deadlined.

A worker that stops reading must not block a large write forever, and one that never
answers must not block a read: both raise :class:`TimeoutError` at the deadline.
"""

from __future__ import annotations

import os
import select
import socket
import time

from tpdisc.sandbox.codec import HEADER, frame


class ReplyTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class Channel:
    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.fd = sock.fileno()
        self.buffer = bytearray()
        self.readable = select.poll()
        self.readable.register(self.fd, select.POLLIN)
        self.writable = select.poll()
        self.writable.register(self.fd, select.POLLOUT)

    @staticmethod
    def _wait(poller: select.poll, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            raise TimeoutError

    def send(self, payload: bytes, deadline: float) -> None:
        """Write one frame; EOFError if the worker is gone, TimeoutError at the deadline."""
        view = memoryview(frame(payload))
        while view:
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                self._wait(self.writable, deadline)
            except (BrokenPipeError, ConnectionResetError):
                raise EOFError from None

    def _fill(self, size: int, deadline: float) -> None:
        if len(self.buffer) < size:
            # The reply is rarely there yet: wait first, saving a failed read per call.
            self._wait(self.readable, deadline)
        while len(self.buffer) < size:
            try:
                chunk = os.read(self.fd, max(65536, size - len(self.buffer)))
            except BlockingIOError:
                self._wait(self.readable, deadline)
                continue
            except ConnectionResetError:
                raise EOFError from None
            if not chunk:
                raise EOFError
            self.buffer += chunk

    def recv(self, cap: int, deadline: float) -> bytes:
        """Read one frame of at most ``cap`` bytes (ReplyTooLarge beyond, before reading it)."""
        self._fill(HEADER.size, deadline)
        (size,) = HEADER.unpack_from(self.buffer)
        if size > cap:
            raise ReplyTooLarge(size)
        end = HEADER.size + size
        self._fill(end, deadline)
        payload = bytes(self.buffer[HEADER.size : end])
        del self.buffer[:end]
        return payload
