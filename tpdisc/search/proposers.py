"""Where candidate protocols come from: a language model, or the offline block library."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tpdisc.errors import ConfigError
from tpdisc.llm_client import ChatReply, LLMClient
from tpdisc.search import blocks, prompts, surrogate
from tpdisc.search.archive import ArchiveStats, Candidate
from tpdisc.search.parsing import AnswerFormatError, parse_answer
from tpdisc.search.prompts import PromptSettings

MAX_NOVELTY_TRIES = 25


@dataclass(frozen=True)
class ProposalRequest:
    """What a proposer is asked for at one iteration."""

    iteration: int
    mode: str  # warm-up, improve or diversify
    stats: ArchiveStats
    baselines: tuple[Candidate, ...] = ()  # shown in warm-up
    parent: Candidate | None = None
    contrasts: tuple[Candidate, ...] = ()
    is_known: Callable[[str], bool] = field(default=lambda code: False, compare=False)
    # every scored design (genome JSON) with its fitness, read when a proposer asks
    scored: Callable[[], Sequence[tuple[Mapping[str, Any], float]]] = field(
        default=lambda: (), compare=False
    )


@dataclass(frozen=True)
class Proposal:
    """A candidate as proposed: code (None if the answer had none) and its explanations."""

    code: str | None
    description: str = ""
    logging: str = ""
    reasoning: str = ""
    format_error: str | None = None
    genome: dict[str, Any] | None = None
    prompt: str | None = None
    answer: str | None = None
    reply: ChatReply | None = None


class Proposer(ABC):
    """Proposes new protocols and repairs failed ones."""

    name: str = ""
    model: str | None = None

    @abstractmethod
    def propose(self, request: ProposalRequest, rng: np.random.Generator) -> Proposal:
        """A new candidate for ``request``."""

    @abstractmethod
    def repair(
        self,
        request: ProposalRequest,
        failed: Proposal,
        error: str,
        rng: np.random.Generator,
    ) -> Proposal:
        """A fixed version of ``failed``, which failed validation with ``error``."""

    def close(self) -> None:  # noqa: B027
        """Release connections."""


class LLMProposer(Proposer):
    """Asks a chat model, with the prompts of :mod:`tpdisc.search.prompts`."""

    name = "llm"

    def __init__(self, client: LLMClient, settings: PromptSettings) -> None:
        self.client = client
        self.settings = settings
        self.model = client.config.model

    def prompt_for(self, request: ProposalRequest) -> str:
        s, stats = self.settings, request.stats
        if request.mode == "warm-up":
            return prompts.warmup_prompt(s, stats, request.baselines)
        if request.parent is None:
            raise ValueError(f"{request.mode} needs a parent")
        if request.mode == "improve":
            return prompts.improve_prompt(s, stats, request.parent, request.contrasts)
        if request.mode == "diversify":
            return prompts.diversify_prompt(s, stats, (request.parent, *request.contrasts))
        raise ValueError(f"unknown mode {request.mode!r}")

    def _ask(self, prompt: str) -> Proposal:
        reply = self.client.chat(
            [
                {"role": "system", "content": prompts.system_prompt()},
                {"role": "user", "content": prompt},
            ]
        )
        text = answer_text(reply)
        try:
            parsed = parse_answer(text)
            if reply.finish_reason == "length" and not parsed.complete:
                raise AnswerFormatError("the code is unfinished")
        except AnswerFormatError as err:
            error = reply_problem(reply, self.client.config.max_tokens, str(err))
            return Proposal(code=None, format_error=error, prompt=prompt, answer=text, reply=reply)
        return Proposal(
            code=parsed.code,
            description=parsed.description,
            logging=parsed.logging,
            reasoning=parsed.reasoning,
            prompt=prompt,
            answer=text,
            reply=reply,
        )

    def propose(self, request: ProposalRequest, rng: np.random.Generator) -> Proposal:
        return self._ask(self.prompt_for(request))

    def repair(
        self,
        request: ProposalRequest,
        failed: Proposal,
        error: str,
        rng: np.random.Generator,
    ) -> Proposal:
        prompt = prompts.repair_prompt(self.settings, request.stats, failed.code, error)
        repaired = self._ask(prompt)
        # A fix without its own explanation keeps the one of the protocol it fixes.
        return replace(
            repaired,
            description=repaired.description or failed.description,
            logging=repaired.logging or failed.logging,
        )

    def close(self) -> None:
        self.client.close()


CUT_OFF = "the answer was cut off"
CUT_OFF_REQUEST = ": answer again more briefly, a short reasoning and then the complete code"


def answer_text(reply: ChatReply) -> str:
    """The text of a reply to read an answer from: its content, or, when that is empty, the
    reasoning a reasoning model's server sent apart (where some servers put all of it)."""
    return reply.text if reply.text.strip() else reply.reasoning


def reply_problem(reply: ChatReply, max_tokens: int | None, error: str) -> str:
    """Why a reply yielded no usable code: ``error`` (the parser's reason), or, when the
    reply itself tells more, that it was cut off at the token limit, or that all its text
    came as the model's reasoning."""
    reasoning_only = not reply.text.strip() and bool(reply.reasoning.strip())
    where = (
        f"all its text ({len(reply.reasoning):,} characters) came in the reply's "
        f"{reply.reasoning_field!r} field, as the model's reasoning"
    )
    if reply.finish_reason == "length":
        about = "about " if reply.usage_estimated else ""
        limit = f"max_tokens {max_tokens:,}" if max_tokens else "the endpoint's token limit"
        return (
            f"{CUT_OFF} at {about}{reply.completion_tokens:,} tokens ({limit}) before its "
            "code was complete" + (f" ({where})" if reasoning_only else "") + CUT_OFF_REQUEST
        )
    if reasoning_only:
        return f"{error}; the reply's content was empty and {where}: answer after reasoning"
    return error


def genome_of(candidate: Candidate | None) -> blocks.Genome | None:
    """The genome behind an archived protocol: its own, or its baseline's counterpart."""
    if candidate is None:
        return None
    if candidate.genome is not None:
        try:
            return blocks.Genome.from_json(candidate.genome)
        except ConfigError:
            return None
    return blocks.seed_genome(candidate.name) if candidate.mode == "seed" else None


class OfflineProposer(Proposer):
    """Program search without a model: mutation and recombination of block-built protocols.

    Warm-up draws random designs; *improve* makes ``screen`` children of the parent (a
    mutation or a numeric tuning, sometimes after crossing it with a contrast solution)
    and proposes the one a :class:`~tpdisc.search.surrogate.Surrogate` fitted on every
    scored design rates best (with ``screen`` 1, or too few scored designs, the first);
    *diversify* draws the design farthest from the parent and contrasts. Designs whose
    code the archive already holds are redrawn.
    """

    name = "offline"
    model = None

    def __init__(self, screen: int = 1) -> None:
        self.screen = screen

    def _offer(self, genome: blocks.Genome, reasoning: str) -> Proposal:
        return Proposal(
            code=blocks.render(genome),
            description=blocks.describe(genome),
            logging=blocks.logging_notes(),
            reasoning=reasoning,
            genome=genome.to_json(),
        )

    def _design(
        self, request: ProposalRequest, rng: np.random.Generator
    ) -> tuple[blocks.Genome, str]:
        parent = genome_of(request.parent)
        if request.mode == "warm-up" or parent is None:
            return blocks.random_genome(rng), "drew a random design from the block library"
        if request.mode == "diversify":
            explored = [g for c in (request.parent, *request.contrasts) if (g := genome_of(c))]
            return (
                blocks.most_different(explored, rng),
                "drew the design farthest from the parent and the contrast solutions",
            )
        others = [g for c in request.contrasts if (g := genome_of(c)) is not None]
        name = request.parent.name if request.parent else "a design"
        children = [self._child(parent, others, rng) for _ in range(self.screen)]
        if self.screen > 1:
            chosen = self._screened(request, children, rng)
            if chosen is not None:
                genome, note, rating = chosen
                return genome, (
                    f"refined {name}: {note} (the best rated of {len(children)} children by "
                    f"a model of the archive's fitness: {rating:.1f})"
                )
        genome, note = children[0]
        return genome, f"refined {name}: {note}"

    @staticmethod
    def _child(
        parent: blocks.Genome, others: list[blocks.Genome], rng: np.random.Generator
    ) -> tuple[blocks.Genome, str]:
        """A mutation of ``parent``, or a tuning of its numbers (one time in three),
        sometimes after crossing it with one of ``others``."""
        notes = []
        genome = parent
        if others and rng.random() < 0.3:
            genome, note = blocks.crossover(genome, others[int(rng.integers(len(others)))], rng)
            notes.append(f"crossed the parent with a contrast solution ({note})")
        if rng.random() < 1 / 3:
            genome, note = blocks.tune(genome, rng)
            notes.append(note)
            if genome != parent:
                return genome, "; ".join(notes)
        for k in range(MAX_NOVELTY_TRIES):
            genome, note = blocks.mutate(genome, rng)
            notes.append(note)
            # one or two changes, and never a copy of the parent (two changes may cancel)
            if genome != parent and (k >= 1 or rng.random() < 0.5):
                break
        return genome, "; ".join(notes)

    @staticmethod
    def _screened(
        request: ProposalRequest,
        children: list[tuple[blocks.Genome, str]],
        rng: np.random.Generator,
    ) -> tuple[blocks.Genome, str, float] | None:
        """The child the surrogate rates best, with its rating; None with too few scored
        designs to fit one."""
        designs, fitness = [], []
        for data, value in request.scored():
            try:
                designs.append(blocks.Genome.from_json(data))
            except ConfigError:
                continue  # a design of an older grammar: nothing to learn from here
            fitness.append(value)
        if len(designs) < surrogate.MIN_DESIGNS:
            return None
        model = surrogate.Surrogate(designs, fitness, int(rng.integers(2**31)))
        ratings = model.rate([g for g, _ in children])
        best = int(np.argmax(ratings))
        return (*children[best], float(ratings[best]))

    def propose(self, request: ProposalRequest, rng: np.random.Generator) -> Proposal:
        genome, reasoning = self._design(request, rng)
        for _ in range(MAX_NOVELTY_TRIES):
            if not request.is_known(blocks.render(genome)):
                break
            genome, note = blocks.mutate(genome, rng)
            reasoning += f"; {note} (the first design was already in the archive)"
        return self._offer(genome, reasoning)

    def repair(
        self,
        request: ProposalRequest,
        failed: Proposal,
        error: str,
        rng: np.random.Generator,
    ) -> Proposal:
        """Make a failing design cheaper: block code does not crash, but it can run out of
        time on big settings, and what it does per step grows with the candidates it
        scores (every agent's last ``horizon`` memories), so halve those."""
        if failed.genome is None:
            return self.propose(request, rng)
        genome = blocks.Genome.from_json(failed.genome)
        cheaper = replace(genome, horizon=max(3, genome.horizon // 2))
        return self._offer(cheaper, f"made the design cheaper after: {error}")
