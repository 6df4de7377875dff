"""A scripted stand-in for a model that writes protocols, served by the local test server.

It answers the search's prompts in the requested format with real, varied protocol code
(rendered from random block designs), and on a fixed plan it misbehaves the way hosted
models and endpoints do: broken code of several kinds (repaired when the repair prompt
arrives), answers without code, 429 with ``Retry-After``, 500, and slow replies.

``python -m tpdisc.testing.fake_author --port 8765`` serves it for manual runs of
``tpdisc evolve --base-url http://127.0.0.1:8765/v1 --model fake``.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Sequence

import numpy as np

from tpdisc.search import blocks
from tpdisc.search.parsing import ParsedAnswer, render_answer
from tpdisc.search.prompts import REPAIR_HEADING
from tpdisc.testing.chat_server import ChatRequest, FakeChatServer, Reply

BROKEN_KINDS: tuple[str, ...] = ("syntax", "crash", "invalid-exchange", "no-code")

_SYNTAX_ERROR = """import numpy as np


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states)
        return {}
"""
_CRASH = """class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.last_seen = {}

    def share_memories(self, i_step, agent_states):
        if i_step >= 2:
            # forgot to fill last_seen: a KeyError at step 2
            return {0: [(1, self.last_seen[1])]}
        return {}
"""
_INVALID_EXCHANGE = """class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents

    def share_memories(self, i_step, agent_states):
        # sends a memory index that does not exist
        return {0: [(1, len(agent_states[1]["memories"]) + 5)]}
"""


class ProtocolAuthor:
    """A responder for :class:`FakeChatServer` (see the module docstring).

    The plan follows the server's request numbers ``n``: with ``faults``, request ``n`` gets
    a 429 when ``n % rate_limit_every == rate_limit_every - 1``, a 500 when
    ``n % server_error_every == server_error_every - 1``, and a slow reply when
    ``n % slow_every == slow_every - 1``; otherwise it answers. Every ``broken_every``-th
    fresh (non-repair) answer is broken, cycling through :data:`BROKEN_KINDS`; repair
    prompts always get working code.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        faults: bool = True,
        broken_every: int = 3,
        rate_limit_every: int = 7,
        server_error_every: int = 11,
        slow_every: int = 13,
        retry_after: float = 0.0,
        slow_delay: float = 0.5,
    ) -> None:
        self.seed = seed
        self.faults = faults
        self.broken_every = broken_every
        self.rate_limit_every = rate_limit_every
        self.server_error_every = server_error_every
        self.slow_every = slow_every
        self.retry_after = retry_after
        self.slow_delay = slow_delay
        self._lock = threading.Lock()
        self._fresh = 0
        self.broken_sent: list[str] = []

    @staticmethod
    def _hits(n: int, every: int) -> bool:
        return every > 0 and n % every == every - 1

    def __call__(self, request: ChatRequest) -> Reply:
        n = request.number
        if self.faults and self._hits(n, self.rate_limit_every):
            return Reply.error(429, "rate limit reached", retry_after=self.retry_after)
        if self.faults and self._hits(n, self.server_error_every):
            return Reply.error(500, "internal error")
        repair = REPAIR_HEADING in request.last_user_text
        with self._lock:
            fresh = self._fresh
            if not repair:
                self._fresh += 1
        broken = self.faults and not repair and self._hits(fresh, self.broken_every)
        if broken:
            kind = BROKEN_KINDS[(fresh // max(1, self.broken_every)) % len(BROKEN_KINDS)]
            with self._lock:
                self.broken_sent.append(kind)
            content = self.broken_answer(kind)
        else:
            content = self.good_answer(n, repair)
        prompt_tokens = len(request.text()) // 4
        completion_tokens = len(content) // 4
        delay = self.slow_delay if self.faults and self._hits(n, self.slow_every) else 0.0
        return Reply(
            content=content,
            delay=delay,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    def good_answer(self, n: int, repair: bool) -> str:
        genome = blocks.random_genome(np.random.default_rng([self.seed, n]))
        answer = ParsedAnswer(
            code=f"```python\n{blocks.render(genome)}```",
            description=blocks.describe(genome),
            logging=blocks.logging_notes(),
            reasoning=(
                "The earlier version failed; this one is written from scratch."
                if repair
                else "Targeted sharing should beat random sharing."
            ),
        )
        # Models often chat around the requested format; the parser must cope.
        return "Here is my design.\n\n" + render_answer(answer) + "\nI hope this helps."

    def broken_answer(self, kind: str) -> str:
        if kind == "no-code":
            return (
                "<reasoning>I would share recent successes.</reasoning>\n"
                "<description>Share recent successes with everyone.</description>\n"
                "<logging>Nothing.</logging>"
            )
        code = {
            "syntax": _SYNTAX_ERROR,
            "crash": _CRASH,
            "invalid-exchange": _INVALID_EXCHANGE,
        }[kind]
        return render_answer(
            ParsedAnswer(
                code=code,
                description=f"A protocol with a deliberate {kind} bug.",
                logging="None.",
                reasoning="Quick draft.",
            )
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve scripted protocol-writing answers.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated designs")
    parser.add_argument("--clean", action="store_true", help="no faults: every answer works")
    parser.add_argument(
        "--retry-after", type=float, default=1.0, help="Retry-After of the 429 replies"
    )
    args = parser.parse_args(argv)
    author = ProtocolAuthor(args.seed, faults=not args.clean, retry_after=args.retry_after)
    with FakeChatServer(author, port=args.port) as server:
        print(f"serving on {server.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
