"""A chat client for any OpenAI-compatible endpoint, with retries, timeouts and a spend cap.

Shared by everything in tpdisc that talks to a language model (the protocol search, the
LLM agents). One :class:`LLMClient` is safe to use from several threads at once: the
accounting is guarded by a lock, the HTTP calls are not serialised.

The API key is read from an environment variable whose *name* is configured; the key itself
is never stored in a config, written to disk or included in an error message.

A reply is untrusted input, and so is its timing. Every request has one deadline for the
whole of it (``timeout``: connecting, sending, and every byte of the reply; each retry has
its own), which httpx's per-read timeouts are not (a body dripped a byte a second never
trips them); the body is read up to ``max_reply_bytes`` (the server is asked not to
compress it, and one it compresses anyway is refused: a small compressed body can expand
without bound); and it is parsed here, not by the SDK, with every field checked. A reply
that breaks any of this is a failed request with its reason, retried like a server error,
never a traceback and never memory in proportion to what the server sends.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpdisc.config_tree import decode, encode_fields
from tpdisc.errors import ConfigError, TpdiscError, excerpt

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}

# Local servers (vLLM, Ollama, the test server) accept any key; the openai client needs one.
PLACEHOLDER_KEY = "no-key-set"
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


class LLMError(TpdiscError):
    """The endpoint failed for good: a non-retryable error, or retries exhausted."""


class BudgetExceededError(LLMError):
    """The configured spending cap is reached; no further call is made."""


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def __post_init__(self) -> None:
        if self.input_per_million < 0 or self.output_per_million < 0:
            raise ConfigError(
                f"prices must not be negative, got {self.input_per_million}/"
                f"{self.output_per_million}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input_per_million, "output": self.output_per_million}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "price") -> ModelPrice:
        """The file's form: ``{input: dollars, output: dollars}`` per million tokens."""
        if set(map(str, data)) - {"input", "output"}:
            raise ConfigError(
                f"{where}: expected {{input: dollars, output: dollars}} per million tokens"
            )
        return decode(cls, {f"{side}_per_million": value for side, value in data.items()}, where)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1e6


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call a chat model. Contains the key's variable name, never the key."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0  # seconds for one whole HTTP request, its reply read; retries apart
    max_retries: int = 6  # extra attempts after a retryable failure
    backoff_initial: float = 1.0  # seconds before the first retry without Retry-After
    backoff_max: float = 60.0
    max_retry_after: float = 600.0  # longest Retry-After honoured as given
    max_cost: float | None = None  # US dollars over the client's life (plus ``spent`` at start)
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    temperature: float | None = None
    max_tokens: int | None = None
    max_reply_bytes: int = 8_000_000  # a reply's body beyond this is a failed request

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url {self.base_url!r} must start with http:// or https://")
        if not self.model.strip():
            raise ConfigError("model must be a non-empty model name")
        if not self.api_key_env or not self.api_key_env.replace("_", "").isalnum():
            raise ConfigError(f"api_key_env {self.api_key_env!r} is not a variable name")
        if self.timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {self.timeout}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be at least 0, got {self.max_retries}")
        if self.backoff_initial < 0 or self.backoff_max < self.backoff_initial:
            raise ConfigError(
                f"backoff must satisfy 0 <= backoff_initial <= backoff_max, got "
                f"{self.backoff_initial} and {self.backoff_max}"
            )
        if self.max_cost is not None and self.max_cost < 0:
            raise ConfigError(f"max_cost must not be negative, got {self.max_cost}")
        if self.max_cost is not None and self.model not in self.prices:
            raise ConfigError(
                f"max_cost is set but model {self.model!r} has no price; give prices "
                "(dollars per million input/output tokens) for it"
            )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.max_reply_bytes < 1_000:
            raise ConfigError(f"max_reply_bytes must be at least 1000, got {self.max_reply_bytes}")

    @property
    def price(self) -> ModelPrice:
        """The configured price of ``model``; free when none is configured."""
        return self.prices.get(self.model, ModelPrice())

    def to_dict(self) -> dict[str, Any]:
        data = encode_fields(self)
        data["prices"] = data.pop("prices")  # last, as files have it
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "llm") -> LLMConfig:
        return decode(cls, data, where)


@dataclass(frozen=True)
class ChatReply:
    """One answered chat request, with what it cost."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    requests: int  # HTTP requests made for this reply, retries included
    seconds: float  # wall time including waits between retries
    finish_reason: str | None = None
    usage_estimated: bool = False  # the server reported no usage; tokens are estimates
    # What a reasoning model thought before answering, where the server sends it apart
    # from the answer, and the field it came in ("reasoning_content", ...).
    reasoning: str = ""
    reasoning_field: str | None = None


@dataclass(frozen=True)
class Usage:
    """Totals over a client's life."""

    calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


def estimate_tokens(text: str) -> int:
    """About four characters per token: used only when a server reports no usage."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or HTTP date) or ``retry-after-ms``."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # a date in Retry-After is rare; the email package is not small

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class ReplyRefused(Exception):
    """A reply that breaks a bound (size, encoding, depth) or cannot be a chat completion:
    its reason, for the failed request."""


# A reply is read at most this deep (a chat completion is a few levels): deeper nesting
# would make parsing recurse, and costs nothing to refuse.
MAX_REPLY_DEPTH = 32
# Token counts beyond this are not a server's honest report.
MAX_TOKENS = 10**9
# Where servers put a reasoning model's thinking, beside ``content``: DeepSeek and vLLM
# ``reasoning_content``, OpenRouter, Ollama and newer vLLM ``reasoning``, some proxies
# ``thinking``. (Mistral sends it as "thinking" parts of a list ``content``.)
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")


class LLMClient:
    """Chat completions with accounting; see the module docstring.

    ``spent`` starts the cost counter (a resumed run passes what it spent before), so that
    ``max_cost`` caps the whole run. ``on_reply`` is called after every successful reply
    (for instance to record it). ``sleep`` and ``rng`` exist so tests can observe waits
    without waiting.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        spent: float = 0.0,
        on_reply: Callable[[ChatReply], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        key = os.environ.get(config.api_key_env) or PLACEHOLDER_KEY
        self._key = key
        self._secret = key if key != PLACEHOLDER_KEY else None
        self._ssl: Any = None  # made on the first request, shared by all
        self._on_reply = on_reply
        self._sleep = sleep
        self._rng = rng or random.Random(0)
        self._lock = threading.Lock()
        self._usage = Usage(cost=spent)

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    @property
    def spent(self) -> float:
        return self.usage.cost

    def close(self) -> None:
        """Nothing stays open between requests; kept so that a client is a context."""

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceededError` when the spending cap is reached."""
        cap = self.config.max_cost
        if cap is not None and self.spent >= cap:
            raise BudgetExceededError(
                f"spending cap reached: ${self.spent:.4f} spent of max_cost ${cap:.4f}"
            )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatReply:
        """Send ``messages``; retry rate limits, server errors, timeouts, lost connections
        and malformed replies."""
        self.check_budget()
        options: dict[str, Any] = {}
        temperature = temperature if temperature is not None else self.config.temperature
        max_tokens = max_tokens if max_tokens is not None else self.config.max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        if max_tokens is not None:
            options["max_tokens"] = max_tokens
        # Imported here: the package takes a third of a second to import, which every
        # command would pay, though most never talk to a model.
        import openai

        started = time.monotonic()
        requests = 0
        while True:
            requests += 1
            try:
                body = self._request(messages, options)
                parsed = _parse_reply(body)
                break
            except openai.APIStatusError as err:
                retryable = err.status_code in RETRYABLE_STATUS or err.status_code >= 500
                reason = f"HTTP {err.status_code}: {self._redact(_line(err.message))}"
                if not retryable:
                    hint = (
                        f" (is ${self.config.api_key_env} set?)"
                        if err.status_code in (401, 403)
                        else ""
                    )
                    raise LLMError(f"{self.config.base_url}: {reason}{hint}") from None
                wait = parse_retry_after(dict(err.response.headers))
            except (openai.APITimeoutError, TimeoutError):
                reason = f"no complete reply within {self.config.timeout:g} s"
                wait = None
            except openai.APIConnectionError as err:
                # The SDK's own message is "Connection error."; the cause says what broke.
                cause = err.__cause__ if err.__cause__ is not None else err
                reason = f"{type(cause).__name__}: {self._redact(_line(str(cause)))}"
                wait = None
            except ReplyRefused as err:
                reason = f"reply refused: {self._redact(str(err))}"
                wait = None
            if requests > self.config.max_retries:
                raise LLMError(
                    f"{self.config.base_url}: giving up after {requests} requests; last error "
                    f"{reason}"
                )
            self._sleep(self._delay(requests, wait))
        return self._account(parsed, messages, requests, time.monotonic() - started)

    def _request(self, messages: Sequence[Message], options: Mapping[str, Any]) -> bytes:
        """One HTTP request, under one deadline for all of it; the reply's body."""
        import anyio

        return anyio.run(self._send, messages, options)

    async def _send(self, messages: Sequence[Message], options: Mapping[str, Any]) -> bytes:
        import anyio
        import httpx2
        import openai

        if self._ssl is None:
            self._ssl = httpx2.create_ssl_context()  # 50 ms: once per client, not per request
        limit = self.config.max_reply_bytes

        async def bounded(response: httpx2.Response) -> None:
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise ReplyRefused(f"compressed ({_line(encoding)}), though asked not to be")
            length = response.headers.get("content-length", "")
            if length.isdigit() and int(length) > limit:
                raise ReplyRefused(f"{int(length):,} bytes, more than the {limit:,} allowed")
            response.stream = _capped_stream()(response.stream, limit)

        async with httpx2.AsyncClient(
            verify=self._ssl,
            timeout=self.config.timeout,
            follow_redirects=True,
            headers={"Accept-Encoding": "identity"},
            event_hooks={"response": [bounded]},
        ) as http:
            client = openai.AsyncOpenAI(
                api_key=self._key, base_url=self.config.base_url, max_retries=0, http_client=http
            )
            with anyio.fail_after(self.config.timeout):
                raw = await client.chat.completions.with_raw_response.create(
                    model=self.config.model,
                    messages=[dict(m) for m in messages],  # type: ignore[misc]
                    **options,
                )
                return bytes(raw.http_response.content)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.config.max_retry_after)
        base = min(self.config.backoff_max, self.config.backoff_initial * 2 ** (attempt - 1))
        # Up to 25% jitter spreads out clients that failed together.
        return base * (1.0 + 0.25 * self._rng.random())

    def _account(
        self, parsed: _Parsed, messages: Sequence[Message], requests: int, seconds: float
    ) -> ChatReply:
        estimated = parsed.prompt_tokens is None or parsed.completion_tokens is None
        if estimated:
            prompt_tokens = sum(estimate_tokens(m.get("content", "")) for m in messages)
            completion_tokens = estimate_tokens(parsed.text + parsed.reasoning)
        else:
            prompt_tokens = parsed.prompt_tokens or 0
            completion_tokens = parsed.completion_tokens or 0
        reply = ChatReply(
            text=parsed.text,
            model=parsed.model or self.config.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=self.config.price.cost(prompt_tokens, completion_tokens),
            requests=requests,
            seconds=seconds,
            finish_reason=parsed.finish_reason,
            usage_estimated=estimated,
            reasoning=parsed.reasoning,
            reasoning_field=parsed.reasoning_field,
        )
        with self._lock:
            u = self._usage
            self._usage = Usage(
                calls=u.calls + 1,
                requests=u.requests + requests,
                prompt_tokens=u.prompt_tokens + prompt_tokens,
                completion_tokens=u.completion_tokens + completion_tokens,
                cost=u.cost + reply.cost,
            )
        if self._on_reply is not None:
            self._on_reply(reply)
        return reply

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "***") if self._secret else text


@functools.cache
def _capped_stream() -> type:
    """The class of a reply's byte stream that stops with :class:`ReplyRefused` past its
    limit (made on first use: httpx takes a tenth of a second to import)."""
    import httpx2

    class Capped(httpx2.AsyncByteStream):
        def __init__(self, inner: Any, limit: int) -> None:
            self._inner, self._limit = inner, limit

        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async for chunk in self._inner:
                size += len(chunk)
                if size > self._limit:
                    raise ReplyRefused(f"more than the {self._limit:,} bytes allowed")
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return Capped


@dataclass(frozen=True)
class _Parsed:
    text: str
    model: str | None
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    reasoning: str = ""
    reasoning_field: str | None = None


def _parse_reply(body: bytes) -> _Parsed:
    """The fields of a chat completion, each checked; :class:`ReplyRefused` otherwise."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise ReplyRefused("JSON nested too deep") from None
    except ValueError as err:  # invalid JSON, invalid UTF-8
        raise ReplyRefused(f"not JSON ({_line(str(err))})") from None
    _check_depth(data)
    if not isinstance(data, dict):
        raise ReplyRefused(f"expected a JSON object, got {excerpt(data)}")
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise ReplyRefused(f"choices: expected a list, got {excerpt(choices)}")
    text, finish, reasoning, field = "", None, "", None
    if choices:
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ReplyRefused(f"choices[0].message: expected an object, got {excerpt(message)}")
        text, reasoning = _content(message.get("content"), "choices[0].message.content")
        field = "content" if reasoning else None
        for name in REASONING_FIELDS:
            value = message.get(name)
            # Provider-specific and optional: a field of another shape is not this one.
            if not reasoning and isinstance(value, str) and value.strip():
                reasoning, field = value, name
        finish = _optional_text(choice.get("finish_reason"), "choices[0].finish_reason")
    model = _optional_text(data.get("model"), "model")
    usage = data.get("usage")
    prompt = completion = None
    if isinstance(usage, dict):
        prompt = _tokens(usage.get("prompt_tokens"), "usage.prompt_tokens")
        completion = _tokens(usage.get("completion_tokens"), "usage.completion_tokens")
    elif usage is not None:
        raise ReplyRefused(f"usage: expected an object, got {excerpt(usage)}")
    return _Parsed(text, model, finish, prompt, completion, reasoning, field)


def _content(value: Any, where: str) -> tuple[str, str]:
    """A message's answer and reasoning from its ``content``: text, or a list of parts
    whose "text" parts are the answer and "thinking" parts the reasoning (other parts, an
    image or a citation, hold neither)."""
    if value is None or isinstance(value, str):
        return value or "", ""
    if not isinstance(value, list):
        raise ReplyRefused(f"{where}: expected text, got {excerpt(value)}")
    answer, thinking = [], []
    for part in value:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            answer.append(part["text"])
        elif kind in ("thinking", "reasoning"):
            inner = part.get(kind)
            pieces = inner if isinstance(inner, list) else [{"text": inner}]
            thinking += [
                p["text"] for p in pieces if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
    return "".join(answer), "\n".join(thinking)


def _check_depth(data: Any) -> None:
    """Refuse containers nested deeper than :data:`MAX_REPLY_DEPTH` (iteratively)."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_REPLY_DEPTH:
                raise ReplyRefused(f"JSON nested more than {MAX_REPLY_DEPTH} levels deep")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)


def _optional_text(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ReplyRefused(f"{where}: expected text, got {excerpt(value)}")
    return value


def _tokens(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise ReplyRefused(f"{where}: expected a token count, got {excerpt(value)}")
    return value


def _line(text: str, limit: int = 300) -> str:
    """A server's text as one bounded line (it is quoted in one-line errors)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
