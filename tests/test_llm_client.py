"""The chat client against the local test server: accounting, retries, caps, secrets."""

from __future__ import annotations

import gzip
import json
import threading
import time

import pytest

from tpdisc.errors import ConfigError
from tpdisc.llm_client import (
    BudgetExceededError,
    LLMClient,
    LLMConfig,
    LLMError,
    ModelPrice,
    parse_retry_after,
)
from tpdisc.testing.chat_server import FakeChatServer, Reply

HELLO = [{"role": "user", "content": "say hello"}]


class Sleeps(list[float]):
    """Records the waits the client asks for instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client_for(server: FakeChatServer, sleeps: Sleeps | None = None, **kwargs) -> LLMClient:
    config = LLMConfig(base_url=server.base_url, model="fake-model", **kwargs)
    return LLMClient(config, sleep=sleeps if sleeps is not None else Sleeps())


def test_reply_text_tokens_and_cost() -> None:
    price = {"fake-model": ModelPrice(input_per_million=2.0, output_per_million=10.0)}
    reply_spec = Reply.text("hello there", prompt_tokens=1000, completion_tokens=200)
    with FakeChatServer([reply_spec]) as server:
        client = client_for(server, prices=price)
        reply = client.chat(HELLO)
    assert reply.text == "hello there"
    assert (reply.prompt_tokens, reply.completion_tokens) == (1000, 200)
    assert reply.cost == pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6)
    assert reply.requests == 1 and not reply.usage_estimated
    usage = client.usage
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 1000, 200)
    assert usage.cost == pytest.approx(reply.cost)
    assert server.requests[0].body["model"] == "fake-model"
    assert server.requests[0].messages == HELLO


def test_key_comes_from_the_environment_and_is_never_kept(monkeypatch) -> None:
    monkeypatch.setenv("TPDISC_TEST_KEY", "sk-secret-123")
    with FakeChatServer(["ok"]) as server:
        config = LLMConfig(base_url=server.base_url, model="m", api_key_env="TPDISC_TEST_KEY")
        LLMClient(config, sleep=Sleeps()).chat(HELLO)
        auth = {k.lower(): v for k, v in server.requests[0].headers.items()}["authorization"]
    assert auth == "Bearer sk-secret-123"
    assert "sk-secret" not in repr(config.to_dict())


def test_rejected_key_is_redacted_and_not_retried(monkeypatch) -> None:
    monkeypatch.setenv("TPDISC_TEST_KEY", "sk-secret-123")
    with FakeChatServer([Reply.error(401, "Incorrect API key provided: sk-secret-123")]) as server:
        config = LLMConfig(base_url=server.base_url, model="m", api_key_env="TPDISC_TEST_KEY")
        with pytest.raises(LLMError) as info:
            LLMClient(config, sleep=Sleeps()).chat(HELLO)
        assert len(server.requests) == 1
    assert "sk-secret" not in str(info.value)
    assert "401" in str(info.value) and "TPDISC_TEST_KEY" in str(info.value)


def test_429_honours_retry_after() -> None:
    sleeps = Sleeps()
    with FakeChatServer([Reply.error(429, "slow down", retry_after=7), "fine"]) as server:
        reply = client_for(server, sleeps).chat(HELLO)
        assert len(server.requests) == 2
    assert reply.text == "fine" and reply.requests == 2
    assert sleeps == [7.0]


def test_server_errors_back_off_exponentially() -> None:
    sleeps = Sleeps()
    script = [Reply.error(500), Reply.error(502), Reply.error(503), "at last"]
    with FakeChatServer(script) as server:
        reply = client_for(server, sleeps, backoff_initial=1.0, backoff_max=3.0).chat(HELLO)
    assert reply.text == "at last" and reply.requests == 4
    assert len(sleeps) == 3
    for wait, base in zip(sleeps, [1.0, 2.0, 3.0], strict=True):
        assert base <= wait <= base * 1.25


def test_gives_up_after_max_retries_with_a_clear_error() -> None:
    sleeps = Sleeps()
    with FakeChatServer(lambda request: Reply.error(500, "down")) as server:
        with pytest.raises(LLMError, match=r"giving up after 3 requests.*HTTP 500"):
            client_for(server, sleeps, max_retries=2).chat(HELLO)
        assert len(server.requests) == 3
    assert len(sleeps) == 2


def test_slow_answer_times_out_and_is_retried() -> None:
    sleeps = Sleeps()
    with FakeChatServer([Reply.slow("too late", delay=2.0), "in time"]) as server:
        reply = client_for(server, sleeps, timeout=0.3).chat(HELLO)
    assert reply.text == "in time" and reply.requests == 2
    assert len(sleeps) == 1


def test_spending_cap_stops_further_calls() -> None:
    price = {"m": ModelPrice(input_per_million=1e6, output_per_million=0.0)}  # $1 per token
    with FakeChatServer(lambda r: Reply.text("x", prompt_tokens=3)) as server:
        config = LLMConfig(base_url=server.base_url, model="m", max_cost=5.0, prices=price)
        client = LLMClient(config, sleep=Sleeps())
        client.chat(HELLO)
        client.chat(HELLO)  # $6 spent now: over the cap after this call
        with pytest.raises(BudgetExceededError, match="cap"):
            client.chat(HELLO)
        assert len(server.requests) == 2
        resumed = LLMClient(config, spent=5.0, sleep=Sleeps())
        with pytest.raises(BudgetExceededError):
            resumed.chat(HELLO)


def test_missing_usage_is_estimated() -> None:
    with FakeChatServer([Reply.text("a" * 40, usage=False)]) as server:
        reply = client_for(server).chat(HELLO)
    assert reply.usage_estimated
    assert reply.completion_tokens == 10 and reply.prompt_tokens > 0


def test_concurrent_calls_are_all_counted() -> None:
    with FakeChatServer(lambda r: Reply.text("ok", prompt_tokens=5, completion_tokens=1)) as s:
        client = client_for(s)
        threads = [threading.Thread(target=client.chat, args=(HELLO,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert client.usage.calls == 8 and client.usage.prompt_tokens == 40


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after({"Retry-After": date}, now=1445412480.0) == pytest.approx(10.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        LLMConfig(base_url="localhost:8000", model="m")
    with pytest.raises(ConfigError, match="no price"):
        LLMConfig(base_url="http://x", model="m", max_cost=1.0)
    with pytest.raises(ConfigError, match="bogus"):
        LLMConfig.from_dict({"base_url": "http://x", "model": "m", "bogus": 1})
    config = LLMConfig.from_dict(
        {"base_url": "http://x", "model": "m", "prices": {"m": {"input": 1, "output": 2}}}
    )
    assert config.price == ModelPrice(1.0, 2.0)
    assert LLMConfig.from_dict(config.to_dict()) == config


# --- hostile replies: one deadline per request, a capped body, a checked parse ---------

GOOD = json.dumps({"choices": [{"message": {"content": "fine"}, "finish_reason": "stop"}]})


def test_a_dripped_reply_ends_at_the_deadline_of_the_whole_request() -> None:
    # A byte every 20 ms: no read ever waits long, so httpx's read timeout never fires;
    # without a deadline on the whole request this reply would take a minute.
    dripped = Reply(raw_body=GOOD + " " * 3_000, drip=0.02)
    with FakeChatServer([dripped]) as server:
        started = time.monotonic()
        with pytest.raises(LLMError, match=r"no complete reply within 1 s"):
            client_for(server, timeout=1.0, max_retries=0).chat(HELLO)
        took = time.monotonic() - started
    assert took < 5.0


def test_a_huge_reply_is_refused_without_being_read() -> None:
    chunk = b"[" + b"0," * 500_000 + b"0]"  # 1 MB, sent 200 times without a length
    with FakeChatServer([Reply(raw_body=chunk, repeat=200)]) as server:
        with pytest.raises(LLMError, match=r"reply refused: more than the 4,000,000 bytes"):
            client_for(server, max_retries=0, max_reply_bytes=4_000_000).chat(HELLO)
        # The client hung up near its cap: the server could not send the 200 MB.
        assert server.bytes_sent < 50_000_000


def test_a_reply_declaring_a_huge_length_is_refused_at_its_headers() -> None:
    declared = Reply(raw_body=GOOD, repeat=2, length=1_500_000_000)
    expected = r"1,500,000,000 bytes, more than the 8,000,000"
    with FakeChatServer([declared]) as server, pytest.raises(LLMError, match=expected):
        client_for(server, max_retries=0).chat(HELLO)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("[" * 1_000_000 + "]" * 1_000_000, "nested"),
        (b'{"choices": [{"message": {"content": "\xff\xfe"}}]}', "not JSON"),
        ("not json at all", "not JSON"),
        ('{"choices": "many"}', "choices: expected a list"),
        ('{"choices": [{"message": {"content": {"text": "x"}}}]}', "content: expected text"),
        ('{"choices": [], "model": ["x"]}', "model: expected text"),
        ('{"choices": [], "usage": {"prompt_tokens": 1e400}}', "prompt_tokens"),
        ('{"choices": [], "usage": {"prompt_tokens": ' + "9" * 500 + "}}", "prompt_tokens"),
        ("[" * 40 + "]" * 40, "nested more than 32"),
    ],
    ids=["deep", "utf-8", "text", "choices", "content", "model", "inf", "big-int", "depth"],
)
def test_a_malformed_reply_is_a_failed_request_with_its_reason(
    body: str | bytes, reason: str
) -> None:
    with (
        FakeChatServer([Reply(raw_body=body)]) as server,
        pytest.raises(
            LLMError, match=f"giving up after 1 requests; last error reply refused: .*{reason}"
        ),
    ):
        client_for(server, max_retries=0).chat(HELLO)


def test_a_malformed_reply_is_retried_like_a_server_error() -> None:
    sleeps = Sleeps()
    with FakeChatServer([Reply(raw_body="{oops"), Reply(raw_body=GOOD)]) as server:
        reply = client_for(server, sleeps).chat(HELLO)
    assert reply.text == "fine" and reply.requests == 2 and len(sleeps) == 1


def test_a_compressed_reply_is_refused() -> None:
    bomb = gzip.compress(b" " * 10_000_000)  # 10 kB that would expand to 10 MB
    reply = Reply(raw_body=bomb, headers={"Content-Encoding": "gzip"})
    with FakeChatServer([reply]) as server:
        with pytest.raises(LLMError, match=r"reply refused: compressed \(gzip\)"):
            client_for(server, max_retries=0).chat(HELLO)
        assert server.requests[0].headers.get("Accept-Encoding") == "identity"


def test_the_reply_size_cap_is_a_setting() -> None:
    with pytest.raises(ConfigError, match="max_reply_bytes"):
        LLMConfig(base_url="http://x", model="m", max_reply_bytes=10)
    config = LLMConfig.from_dict({"base_url": "http://x", "model": "m", "max_reply_bytes": 5_000})
    assert config.max_reply_bytes == 5_000


# --- reasoning models: where their text comes ---------------------------------------------


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "thinking"])
def test_a_reasoning_models_thinking_is_kept_apart_from_its_answer(field: str) -> None:
    replies = [
        Reply.reasoned("First, the pairs.", "<code>x</code>", reasoning_field=field),
        Reply.reasoned("All of it went here.", reasoning_field=field, usage=False),
    ]
    with FakeChatServer(replies) as server:
        client = client_for(server)
        answered, thought_only = client.chat(HELLO), client.chat(HELLO)
    assert (answered.text, answered.reasoning, answered.reasoning_field) == (
        "<code>x</code>",
        "First, the pairs.",
        field,
    )
    assert (thought_only.text, thought_only.reasoning) == ("", "All of it went here.")
    # billed for its thinking: the estimate counts it
    assert thought_only.usage_estimated and thought_only.completion_tokens == 5


def test_content_as_a_list_of_parts_gives_its_text_and_its_thinking() -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Weigh the pairs."}]},
        {"type": "text", "text": "<code>"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
        {"type": "text", "text": "x</code>"},
    ]
    with FakeChatServer([Reply(content=parts)]) as server:
        reply = client_for(server).chat(HELLO)
    assert (reply.text, reply.reasoning, reply.reasoning_field) == (
        "<code>x</code>",
        "Weigh the pairs.",
        "content",
    )
