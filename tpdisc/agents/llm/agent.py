"""LLM agents (SPEC §2): a chat model picks the pair to attempt each step.

Each step an agent sends the rules and its situation (:mod:`tpdisc.agents.llm.prompt`) and
reads ``<answer>element1 + element2</answer>``. An answer that names no usable pair (no tag,
an element it cannot use now, one element only…) gets one re-ask that says why; if the
second answer is unusable too, the agent falls back to a uniform choice among the pairs
whose outcome it has not seen (its own attempts and the records it received), over its
inventory plus borrowed elements, with no social bias. Re-asks and fallbacks are counted in
:meth:`LLMAgent.stats`, with requests, cache hits, tokens and cost.

All LLM agents of a simulation share one :class:`LLMSession`: one client (the search's
:class:`~tpdisc.llm_client.LLMClient`, with its retries of rate limits and server errors),
one response cache and one thread pool, so the agents of a step ask concurrently, at most
``concurrency`` at a time. An endpoint that still fails after the client's retries stops the
simulation with :class:`~tpdisc.llm_client.LLMError`: random choices in place of a dead
model would pass for results.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np

from tpdisc.agents.base import FAILED, Agent, AgentContext, AgentState, Memory
from tpdisc.agents.llm.cache import CachedAnswer, ResponseCache, cache_key
from tpdisc.agents.llm.config import LLMAgentConfig
from tpdisc.agents.llm.prompt import (
    NamedMemory,
    PromptView,
    UnusableAnswer,
    messages_for,
    parse_answer,
    reask_message,
)
from tpdisc.agents.stochastic import StochasticAgent
from tpdisc.domain.recipes import Pair, RecipeGraph
from tpdisc.errors import ConfigError
from tpdisc.llm_client import ChatReply, LLMClient, LLMError, Message

# Counters every LLM agent reports (summed over agents, then over simulations).
STAT_KEYS = (
    "llm_choices",  # steps decided
    "llm_reasks",  # first answers that named no usable pair
    "llm_fallbacks",  # steps decided by the fallback after an unusable second answer
    "llm_repeats",  # chosen pairs whose outcome the agent had already seen
    "llm_cache_hits",  # answers read from the response cache
    "llm_calls",  # answers from the endpoint
    "llm_requests",  # HTTP requests, retries included
    "llm_prompt_tokens",  # of the answers from the endpoint (cache hits are free)
    "llm_completion_tokens",
    "llm_usage_estimated",  # endpoint answers without usage, whose tokens are estimates
    "llm_cost",  # US dollars, at the configured prices
)


def _close(client: LLMClient, cache: ResponseCache | None, pool: ThreadPoolExecutor) -> None:
    pool.shutdown(wait=False)
    client.close()
    if cache is not None:
        cache.close()


class LLMSession:
    """The client, response cache and thread pool of one simulation's LLM agents."""

    def __init__(self, config: LLMAgentConfig) -> None:
        self.config = config
        self.client = LLMClient(config.client)
        path = config.resolved_cache_path()
        self.cache = ResponseCache(path) if path is not None else None
        self.pool = ThreadPoolExecutor(config.concurrency, thread_name_prefix="llm-agent")
        weakref.finalize(self, _close, self.client, self.cache, self.pool)

    def ask(self, messages: Sequence[Message], sample: str) -> tuple[str, ChatReply | None]:
        """The answer to ``messages``, and the endpoint's reply (None for a cache hit)."""
        settings = self.config.client
        key = cache_key(
            settings.model,
            messages,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            sample=sample,
        )
        if self.cache is not None and (hit := self.cache.get(key)) is not None:
            return hit.text, None
        reply = self.client.chat(messages)
        if self.cache is None:
            return reply.text, reply
        answer = CachedAnswer(reply.text, reply.prompt_tokens, reply.completion_tokens)
        return self.cache.put(key, settings.model, answer).text, reply


class LLMAgent(Agent):
    """An agent whose choices come from a chat model; see the module docstring."""

    kind = "llm"

    def __init__(
        self, graph: RecipeGraph, agent_id: int, n_steps: int, config: LLMAgentConfig
    ) -> None:
        self.graph = graph
        self.agent_id = agent_id
        self.n_steps = n_steps
        self.config = config
        self.step = 0
        self.received: list[Memory] = []
        # among the pairs whose outcome the agent has seen at all (the module docstring)
        self.fallback = StochasticAgent(graph.n_elements, p_social=0.0, received="always")
        self.sample: str | None = None
        self.session: LLMSession | None = None
        self.counts = dict.fromkeys(STAT_KEYS, 0.0)

    @classmethod
    def from_context(cls, ctx: AgentContext) -> LLMAgent:
        if ctx.params.llm is None:
            raise ConfigError(
                "agent type 'llm' needs a chat endpoint: give --llm-base-url and --llm-model"
            )
        return cls(ctx.graph, ctx.agent_id, ctx.n_steps, ctx.params.llm)

    def choose(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        return self.choose_many([self], [state], [social], [rng])[0]

    @classmethod
    def choose_many(
        cls,
        agents: Sequence[Agent],
        states: Sequence[AgentState],
        socials: Sequence[Sequence[int]],
        rngs: Sequence[np.random.Generator],
    ) -> list[Pair]:
        """Every agent's choice, asked concurrently through the agents' shared session."""
        llm_agents = cast(Sequence[LLMAgent], agents)
        session = next((a.session for a in llm_agents if a.session is not None), None)
        if session is None:
            session = LLMSession(llm_agents[0].config)
        for agent in llm_agents:
            agent.session = session
        jobs = list(zip(llm_agents, states, socials, rngs, strict=True))
        if len(jobs) == 1 or session.config.concurrency == 1:
            return [agent.decide(s, soc, r) for agent, s, soc, r in jobs]
        futures = [session.pool.submit(agent.decide, s, soc, r) for agent, s, soc, r in jobs]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:  # the simulation stops: send no further requests
                f.cancel()
            raise

    def view(self, state: AgentState, social: Sequence[int]) -> PromptView:
        names = self.graph.names

        def named(memories: Sequence[Memory]) -> list[NamedMemory]:
            return [(names[a], names[b], names[r] if r != FAILED else None) for a, b, r in memories]

        return PromptView(
            step=self.step,
            n_steps=self.n_steps,
            inventory=[names[e] for e in state.inventory],
            borrowed=[names[e] for e in social if not state.owned[e]],
            own_memories=named(state.memories),
            received=named(self.received),
        )

    def decide(self, state: AgentState, social: Sequence[int], rng: np.random.Generator) -> Pair:
        """This step's pair: ask, re-ask once with the reason, else fall back."""
        if self.sample is None:
            # Names this agent's draws in the cache: a function of the seed and agent id.
            self.sample = f"{int(rng.integers(2**63)):016x}"
        view = self.view(state, social)
        self.received = []
        self.step += 1
        self.counts["llm_choices"] += 1
        usable = view.usable
        messages: list[Message] = list(messages_for(view))
        text = self.ask(messages)
        try:
            first, second = parse_answer(text, usable)
        except UnusableAnswer as err:
            self.counts["llm_reasks"] += 1
            messages += [{"role": "assistant", "content": text}, reask_message(str(err), usable)]
            text = self.ask(messages)
            try:
                first, second = parse_answer(text, usable)
            except UnusableAnswer:
                self.counts["llm_fallbacks"] += 1
                return self.fallback.choose(state, social, rng)
        a, b = self.graph.id_of(first), self.graph.id_of(second)
        if not self.fallback.unknown[self.fallback.key(a, b)]:
            self.counts["llm_repeats"] += 1
        return (a, b) if a <= b else (b, a)

    def ask(self, messages: Sequence[Message]) -> str:
        assert self.session is not None and self.sample is not None
        try:
            text, reply = self.session.ask(messages, self.sample)
        except LLMError as err:
            raise type(err)(f"LLM agent {self.agent_id}, step {self.step}: {err}") from None
        if reply is None:
            self.counts["llm_cache_hits"] += 1
            return text
        counts = self.counts
        counts["llm_calls"] += 1
        counts["llm_requests"] += reply.requests
        counts["llm_prompt_tokens"] += reply.prompt_tokens
        counts["llm_completion_tokens"] += reply.completion_tokens
        counts["llm_usage_estimated"] += reply.usage_estimated
        counts["llm_cost"] += reply.cost
        return text

    def observe_own(self, a: int, b: int, result: int) -> None:
        self.fallback.observe_own(a, b, result)

    def observe_received(self, memories: Sequence[Memory]) -> None:
        self.received = list(memories)
        self.fallback.observe_received(memories)

    def stats(self) -> dict[str, float]:
        return dict(self.counts)
