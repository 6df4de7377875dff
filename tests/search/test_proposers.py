"""Proposers: the LLM one against the local server, the offline one on block designs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tpdisc.llm_client import LLMClient, LLMConfig
from tpdisc.search import blocks
from tpdisc.search.archive import ArchiveStats, Candidate
from tpdisc.search.config import SearchConfig
from tpdisc.search.parsing import ParsedAnswer, render_answer
from tpdisc.search.prompts import REPAIR_HEADING, PromptSettings
from tpdisc.search.proposers import LLMProposer, OfflineProposer, ProposalRequest, genome_of
from tpdisc.sim.config import SimConfig
from tpdisc.testing.chat_server import FakeChatServer, Reply

STATS = ArchiveStats(6, 1, 60.0, 70.0, "stochastic")
CODE = (
    "class TransmissionProtocol:\n"
    "    def share_memories(self, i_step, agent_states):\n"
    "        return {}"
)


def archived(
    name: str, genome: blocks.Genome | None, mode: str = "warm-up", id: int = 1
) -> Candidate:
    return Candidate(
        name=name,
        iteration=1,
        attempt=0,
        mode=mode,
        status="valid",
        proposer="t",
        code=blocks.render(genome) if genome else "x",
        fitness_mean=65.0,
        id=id,
        genome=genome.to_json() if genome else None,
    )


def test_offline_warmup_draws_a_rendered_design() -> None:
    proposal = OfflineProposer().propose(
        ProposalRequest(1, "warm-up", STATS), np.random.default_rng(0)
    )
    genome = blocks.Genome.from_json(proposal.genome)
    assert proposal.code == blocks.render(genome)
    assert proposal.description == blocks.describe(genome) and proposal.logging
    assert proposal.reply is None and "random design" in proposal.reasoning


def test_offline_improve_stays_close_to_the_parent() -> None:
    rng = np.random.default_rng(1)
    parent_genome = blocks.random_genome(rng)
    parent = archived("i0003", parent_genome)
    request = ProposalRequest(5, "improve", STATS, parent=parent)
    for _ in range(20):
        proposal = OfflineProposer().propose(request, rng)
        child = blocks.Genome.from_json(proposal.genome)
        differing = [
            g for g in parent_genome.to_json() if getattr(child, g) != getattr(parent_genome, g)
        ]
        assert differing and proposal.reasoning.startswith("refined i0003")
        if "tuned" in proposal.reasoning:  # numbers only, each a small step
            numeric = {n.partition(":")[0] for n in blocks.numeric_genes(parent_genome)}
            assert set(differing) <= numeric | {"weights"}
        else:
            assert len(differing) <= 3


def test_offline_improve_scores_the_child_the_surrogate_rates_best() -> None:
    """With scored designs whose fitness is their number of memories, the screened child
    is the one with the most memories among the children a plain proposer would make."""
    rng = np.random.default_rng(4)
    data = [blocks.random_genome(rng) for _ in range(60)]
    scored = [(g.to_json(), float(g.n_memories)) for g in data]
    parent = archived("i0003", blocks.Genome(route="everyone", n_memories=10))
    request = ProposalRequest(5, "improve", STATS, parent=parent, scored=lambda: scored)
    proposal = OfflineProposer(screen=16).propose(request, np.random.default_rng(9))
    children = [
        OfflineProposer._child(blocks.Genome.from_json(parent.genome), [], r)[0]
        for r in [np.random.default_rng(9)]
        for _ in range(16)
    ]
    chosen = blocks.Genome.from_json(proposal.genome)
    assert chosen in children
    assert chosen.n_memories == max(c.n_memories for c in children) > 10
    assert "best rated of 16 children" in proposal.reasoning


def test_offline_improve_without_enough_scored_designs_takes_the_first_child() -> None:
    parent = archived("i0003", blocks.Genome(route="everyone"))
    request = ProposalRequest(5, "improve", STATS, parent=parent, scored=lambda: [])
    screened = OfflineProposer(screen=8).propose(request, np.random.default_rng(2))
    plain = OfflineProposer().propose(request, np.random.default_rng(2))
    assert screened.genome == plain.genome and "rated" not in screened.reasoning


def test_offline_improve_starts_from_a_baseline_counterpart() -> None:
    seed = archived("paired", None, mode="seed")
    assert genome_of(seed) == blocks.BASELINE_GENOMES["paired"]
    proposal = OfflineProposer().propose(
        ProposalRequest(5, "improve", STATS, parent=seed), np.random.default_rng(2)
    )
    child = blocks.Genome.from_json(proposal.genome)
    assert blocks.distance(child, blocks.BASELINE_GENOMES["paired"]) < 3


def test_offline_diversify_moves_away() -> None:
    rng = np.random.default_rng(3)
    explored = [blocks.random_genome(rng) for _ in range(3)]
    parent, *others = [archived(f"p{i}", g, id=i + 1) for i, g in enumerate(explored)]
    request = ProposalRequest(5, "diversify", STATS, parent=parent, contrasts=tuple(others))
    child = blocks.Genome.from_json(OfflineProposer().propose(request, rng).genome)
    assert min(blocks.distance(child, g) for g in explored) > 1.0


def test_offline_avoids_designs_already_archived() -> None:
    rng = np.random.default_rng(4)
    first = OfflineProposer().propose(
        ProposalRequest(1, "warm-up", STATS), np.random.default_rng(4)
    )
    request = ProposalRequest(1, "warm-up", STATS, is_known=lambda code: code == first.code)
    again = OfflineProposer().propose(request, rng)
    assert again.code != first.code and "already in the archive" in again.reasoning


def test_offline_repair_makes_the_design_cheaper() -> None:
    genome = blocks.Genome(
        route="everyone", horizon=40, weights=(("untried", 1.0), ("recency", 1.0))
    )
    failed = OfflineProposer()._offer(genome, "x")
    fixed = OfflineProposer().repair(
        ProposalRequest(1, "warm-up", STATS), failed, "[timeout] slow", np.random.default_rng(0)
    )
    cheaper = blocks.Genome.from_json(fixed.genome)
    assert cheaper == replace(genome, horizon=20) and "timeout" in fixed.reasoning


@pytest.fixture
def settings() -> PromptSettings:
    return PromptSettings.from_config(SearchConfig(sim=SimConfig(agent_type="stochastic")))


def test_llm_proposer_asks_and_parses(settings) -> None:
    answer = render_answer(
        ParsedAnswer(code=CODE, description="desc", logging="logs", reasoning="why")
    )
    seeds = (archived("paired", None, mode="seed"),)
    with FakeChatServer([Reply.text(answer, prompt_tokens=900, completion_tokens=100)]) as server:
        proposer = LLMProposer(
            LLMClient(LLMConfig(base_url=server.base_url, model="fake")), settings
        )
        proposal = proposer.propose(
            ProposalRequest(1, "warm-up", STATS, baselines=seeds), np.random.default_rng(0)
        )
        sent = server.requests[0]
    assert (proposal.code, proposal.description, proposal.logging, proposal.reasoning) == (
        CODE,
        "desc",
        "logs",
        "why",
    )
    assert proposal.reply.prompt_tokens == 900 and proposal.answer == answer
    assert proposal.prompt == sent.last_user_text and "Baseline: paired" in proposal.prompt
    assert [m["role"] for m in sent.messages] == ["system", "user"]
    assert proposer.model == "fake"


def test_llm_proposer_reports_missing_code_and_repairs(settings) -> None:
    fixed = render_answer(ParsedAnswer(code=CODE, description="", logging="", reasoning="fixed"))
    with FakeChatServer(["<description>only words</description>", fixed]) as server:
        proposer = LLMProposer(
            LLMClient(LLMConfig(base_url=server.base_url, model="fake")), settings
        )
        parent = archived("i0001", blocks.Genome(), id=1)
        request = ProposalRequest(3, "improve", STATS, parent=parent)
        first = proposer.propose(request, np.random.default_rng(0))
        assert first.code is None and "no <code> section" in first.format_error
        repaired = proposer.repair(request, first, first.format_error, np.random.default_rng(0))
        repair_prompt = server.requests[1].last_user_text
    assert REPAIR_HEADING in repair_prompt and "no <code> section" in repair_prompt
    assert repaired.code == CODE and repaired.description == first.description


def warm_up_proposal(server: FakeChatServer, settings: PromptSettings):
    proposer = LLMProposer(LLMClient(LLMConfig(base_url=server.base_url, model="fake")), settings)
    return proposer.propose(ProposalRequest(1, "warm-up", STATS), np.random.default_rng(0))


def test_an_answer_cut_off_after_its_code_keeps_the_code(settings) -> None:
    """The token limit stopped the chatter after the class: the code is whole, and taken."""
    answer = render_answer(ParsedAnswer(code=CODE)) + "\nThis design should beat the basel"
    with FakeChatServer([Reply.text(answer, finish_reason="length")]) as server:
        proposal = warm_up_proposal(server, settings)
    assert proposal.code == CODE and proposal.format_error is None


def test_a_cut_off_answer_without_a_token_count_names_the_estimate(settings) -> None:
    cut = "<code>\n" + CODE[:40]
    reply = Reply.text(cut, finish_reason="length", usage=False)
    with FakeChatServer([reply]) as server:
        proposal = warm_up_proposal(server, settings)
    assert proposal.code is None and proposal.answer == cut
    assert proposal.format_error.startswith(
        "the answer was cut off at about 12 tokens (the endpoint's token limit) before its code"
    )
