"""The local OpenAI-compatible test server itself, spoken to with plain HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from tpdisc.testing.chat_server import ChatRequest, FakeChatServer, Reply, ScriptedResponder


def post(url: str, body: dict) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


BODY = {
    "model": "m",
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u v"}],
}


def test_scripted_replies_in_order_then_500() -> None:
    with FakeChatServer(["first", Reply.error(429, "busy", retry_after=3)]) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        status, data, _ = post(server.base_url, BODY)
        assert status == 200
        assert data["choices"][0]["message"]["content"] == "first"
        assert data["usage"] == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        assert data["model"] == "m"
        status, data, headers = post(server.base_url, BODY)
        assert status == 429 and headers["Retry-After"] == "3"
        assert data["error"]["message"] == "busy"
        status, data, _ = post(server.base_url, BODY)
        assert status == 500 and "exhausted" in data["error"]["message"]
        assert [r.number for r in server.requests] == [0, 1, 2]


def test_callable_responder_sees_the_request() -> None:
    seen: list[ChatRequest] = []

    def responder(request: ChatRequest) -> Reply:
        seen.append(request)
        return Reply.text(request.last_user_text.upper())

    with FakeChatServer(responder) as server:
        _, data, _ = post(server.base_url, BODY)
    assert data["choices"][0]["message"]["content"] == "U V"
    assert seen[0].text("system") == "s" and seen[0].model == "m"


def test_responder_failure_becomes_a_500() -> None:
    def broken(request: ChatRequest) -> Reply:
        raise ValueError("oops")

    with FakeChatServer(broken) as server:
        status, data, _ = post(server.base_url, BODY)
    assert status == 500 and "ValueError: oops" in data["error"]["message"]


def test_script_continues_with_then() -> None:
    responder = ScriptedResponder(["a"], then=lambda r: Reply.text("b"))
    with FakeChatServer(responder) as server:
        answers = [
            post(server.base_url, BODY)[1]["choices"][0]["message"]["content"] for _ in "xyz"
        ]
    assert answers == ["a", "b", "b"]


def test_stopped_server_frees_its_port() -> None:
    server = FakeChatServer(["x"]).start()
    port = server.port
    server.stop()
    again = FakeChatServer(["x"], port=port).start()
    try:
        assert again.port == port
    finally:
        again.stop()


def test_a_reasoning_reply_sends_its_thinking_beside_a_null_content() -> None:
    replies = [
        Reply.reasoned("think think", finish_reason="length"),
        Reply.reasoned("hmm", "answer", reasoning_field="reasoning"),
    ]
    with FakeChatServer(replies) as server:
        _, cut, _ = post(server.base_url, BODY)
        _, answered, _ = post(server.base_url, BODY)
    choice = cut["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "think think",
    }
    assert choice["finish_reason"] == "length" and cut["usage"]["completion_tokens"] == 2
    assert answered["choices"][0]["message"]["reasoning"] == "hmm"
    assert answered["usage"]["completion_tokens"] == 2
