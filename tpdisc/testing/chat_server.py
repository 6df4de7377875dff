"""A local OpenAI-compatible chat server for tests: scripted answers, errors, slow replies.

Nothing here talks to the internet. Tests start a :class:`FakeChatServer` on 127.0.0.1
(a free port chosen by the system), point an :class:`~tpdisc.llm_client.LLMClient` at
``server.base_url``, and decide what each request gets with a *responder*: a list of
:class:`Reply` objects served in order, or any callable ``(ChatRequest) -> Reply``::

    with FakeChatServer([Reply.error(429, retry_after=2), Reply.text("hello")]) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="fake"))
        assert client.chat([{"role": "user", "content": "hi"}]).text == "hello"
        assert len(server.requests) == 2
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ChatRequest:
    """A request the server received."""

    path: str
    body: dict[str, Any]
    headers: Mapping[str, str]
    number: int  # 0 for the first request the server got, then 1, 2, ...

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    def text(self, role: str | None = None) -> str:
        """The contents of all messages (of ``role`` only, if given), joined by newlines."""
        return "\n".join(
            str(m.get("content", ""))
            for m in self.messages
            if role is None or m.get("role") == role
        )

    @property
    def last_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request."""

    content: str | list[Any] | None = ""  # None: JSON null, as reasoning servers send
    status: int = 200
    delay: float = 0.0  # seconds to wait before answering (a slow model)
    headers: Mapping[str, str] = field(default_factory=dict)
    prompt_tokens: int | None = None  # default: words in the request
    completion_tokens: int | None = None  # default: words in the answer
    usage: bool = True  # False: leave usage out of the response, as some servers do
    finish_reason: str = "stop"
    raw_body: str | bytes | None = None  # sent as it is instead of a chat completion
    # A hostile server: the body sent ``repeat`` times over (without a length, unless
    # ``length`` declares one), ``drip`` seconds between its bytes.
    repeat: int = 1
    drip: float = 0.0
    length: int | None = None
    # A reasoning model's thinking, sent beside the content in ``reasoning_field``.
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        return cls(content=content, **kwargs)

    @classmethod
    def reasoned(cls, reasoning: str, content: str | None = None, **kwargs: Any) -> Reply:
        """A reasoning model's reply: its thinking in ``reasoning_content`` (or another
        ``reasoning_field``), and ``content`` (null by default: all went to the thinking)."""
        return cls(content=content, reasoning=reasoning, **kwargs)

    @classmethod
    def error(
        cls, status: int, message: str = "", *, retry_after: float | str | None = None
    ) -> Reply:
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        body = json.dumps(
            {"error": {"message": message or f"error {status}", "type": "test", "code": status}}
        )
        return cls(status=status, headers=headers, raw_body=body)

    @classmethod
    def slow(cls, content: str, delay: float, **kwargs: Any) -> Reply:
        return cls(content=content, delay=delay, **kwargs)


Responder = Callable[[ChatRequest], Reply]


class ScriptedResponder:
    """Serves replies in order; after the script, defers to ``then`` (or answers 500)."""

    def __init__(self, script: Iterable[Reply | str], then: Responder | None = None) -> None:
        self._script = [Reply.text(r) if isinstance(r, str) else r for r in script]
        self._then = then
        self._lock = threading.Lock()
        self._next = 0

    def __call__(self, request: ChatRequest) -> Reply:
        with self._lock:
            index = self._next
            self._next += 1
        if index < len(self._script):
            return self._script[index]
        if self._then is not None:
            return self._then(request)
        return Reply.error(500, f"script exhausted after {len(self._script)} replies")


def _words(text: str) -> int:
    return len(text.split())


def _text(content: str | list[Any] | None) -> str:
    """The words of a reply's content: its text, a list of parts as JSON, none for null."""
    if content is None or isinstance(content, str):
        return content or ""
    return json.dumps(content)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr logging; tests read ``server.requests``."""

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake"}]}), {})
        else:
            self._send(404, json.dumps({"error": {"message": "not found"}}), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, json.dumps({"error": {"message": "request is not JSON"}}), {})
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}), {})
            return
        request = self.server.owner.record(self.path, body, dict(self.headers.items()))
        try:
            reply = self.server.owner.responder(request)
        except Exception as err:  # a bug in a test's responder must show, not hang
            reply = Reply.error(500, f"responder failed: {type(err).__name__}: {err}")
        if reply.delay > 0:
            time.sleep(reply.delay)
        if reply.raw_body is not None:
            payload = reply.raw_body
        else:
            payload = json.dumps(self._completion(request, reply))
        if reply.repeat != 1 or reply.drip > 0 or reply.length is not None:
            self._send_hostile(reply, payload.encode() if isinstance(payload, str) else payload)
        else:
            self._send(reply.status, payload, reply.headers)

    def _completion(self, request: ChatRequest, reply: Reply) -> dict[str, Any]:
        prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _words(request.text())
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.reasoning is not None:
            message[reply.reasoning_field] = reply.reasoning
        completion = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else _words(_text(reply.content)) + _words(reply.reasoning or "")
        )
        data: dict[str, Any] = {
            "id": f"chatcmpl-test-{request.number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model or "fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage:
            data["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return data

    def _send_hostile(self, reply: Reply, data: bytes) -> None:
        """The body ``reply.repeat`` times, byte by byte every ``reply.drip`` seconds; the
        connection closes after it (no length unless ``reply.length`` declares one)."""
        self.close_connection = True
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            if reply.length is not None:
                self.send_header("Content-Length", str(reply.length))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            for _ in range(reply.repeat):
                if reply.drip > 0:
                    for k in range(len(data)):
                        self.wfile.write(data[k : k + 1])
                        self.wfile.flush()
                        self.server.owner.sent(1)
                        time.sleep(reply.drip)
                else:
                    self.wfile.write(data)
                    self.server.owner.sent(len(data))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def _send(self, status: int, payload: str | bytes, headers: Mapping[str, str]) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to tell it


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeChatServer


class FakeChatServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint on 127.0.0.1.

    ``responder`` is a callable ``(ChatRequest) -> Reply`` or a sequence of replies (and
    plain strings, meaning successful answers) served in order. ``requests`` lists every
    chat request received, in arrival order. Use as a context manager, or call
    :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        responder: Responder | Sequence[Reply | str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.responder: Responder = (
            responder if callable(responder) else ScriptedResponder(responder)
        )
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[ChatRequest] = []
        self._sent = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    @property
    def requests(self) -> list[ChatRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def bytes_sent(self) -> int:
        """Bytes of hostile bodies written so far (see :class:`Reply`'s ``repeat``)."""
        with self._lock:
            return self._sent

    def sent(self, count: int) -> None:
        with self._lock:
            self._sent += count

    def record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> ChatRequest:
        with self._lock:
            request = ChatRequest(path, body, headers, len(self._requests))
            self._requests.append(request)
            return request

    def start(self) -> FakeChatServer:
        httpd = _Server((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
