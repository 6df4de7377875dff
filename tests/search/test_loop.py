"""The search loop end to end on a toy game: offline and LLM proposers, resumption."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.search.answers import MEANT, OTHER, final, requested
from tpdisc.domain.variants import make_domain
from tpdisc.errors import ConfigError
from tpdisc.executors.base import Executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.serial import SerialExecutor
from tpdisc.llm_client import LLMClient, LLMConfig, ModelPrice
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import RunSummary, SearchLoop, open_run_dir
from tpdisc.search.prompts import REPAIR_HEADING, PromptSettings
from tpdisc.search.proposers import CUT_OFF_REQUEST, LLMProposer, OfflineProposer, Proposer
from tpdisc.search.selection import contrasts, thompson_parent
from tpdisc.sim import records
from tpdisc.sim.config import SimConfig
from tpdisc.testing.chat_server import FakeChatServer, Reply
from tpdisc.testing.fake_author import BROKEN_KINDS, ProtocolAuthor

TINY = SearchConfig(
    iterations=8,
    warmup=3,
    sims=2,
    check_steps=4,
    sim=SimConfig(n_agents=4, n_steps=8, agent_type="stochastic"),
)


def run(
    run_dir: Path,
    config: SearchConfig,
    graph,
    proposer: Proposer | None = None,
    executor: Executor | None = None,
) -> Archive:
    config = open_run_dir(run_dir, config, {"iterations": config.iterations, "batch": config.batch})
    with SearchLoop(
        run_dir,
        config,
        make_domain(graph),
        proposer or OfflineProposer(config.surrogate_screen),
        executor or SerialExecutor(),
    ) as loop:
        loop.summary = loop.run()
    return Archive(run_dir / Archive.FILE_NAME, readonly=True)


def fingerprint(archive: Archive) -> list[tuple]:
    return [
        (c.name, c.mode, c.status, c.code_sha256, c.parent_id, c.fitness_values)
        for c in archive.candidates()
    ]


def test_offline_run_fills_the_archive(tmp_path, toy_graph) -> None:
    with run(tmp_path / "r", TINY, toy_graph) as archive:
        valid = archive.candidates(valid_only=True)
        iterations = archive.iterations()
        config = SearchConfig.load(tmp_path / "r" / "config.yaml")
    assert config == TINY
    assert [c.name for c in valid[:5]] == ["asocial", "paired", "dynamic", "graph", "stochastic"]
    assert len(valid) == 5 + 8 and [i["iteration"] for i in iterations] == list(range(1, 9))
    assert all(c.fitness_values and c.seeds == [0, 1] for c in valid)
    for c in valid[5:]:
        assert c.proposer == "offline" and c.genome and c.description and c.code
        if c.iteration <= 3:
            assert c.mode == "warm-up" and c.parent_id is None
        else:
            assert c.mode in ("improve", "diversify") and c.lineage[0] == c.parent_id
            assert not set(c.contrast_ids) & set(c.lineage)
            assert len(c.contrast_ids) == 2
        assert len(c.logs) == 2  # get_logs of each simulation
        assert all(
            {e["metric_name"] for e in logs} == {"memories_sent", "active_steps"} for logs in c.logs
        )


def test_resume_makes_the_same_choices(tmp_path, toy_graph) -> None:
    with run(tmp_path / "straight", TINY, toy_graph) as archive:
        straight = fingerprint(archive)
    run(tmp_path / "parts", replace(TINY, iterations=3), toy_graph).close()
    run(tmp_path / "parts", replace(TINY, iterations=5), toy_graph).close()
    with run(tmp_path / "parts", TINY, toy_graph) as archive:
        assert fingerprint(archive) == straight


def test_selection_reads_whole_rows_only_for_the_protocols_it_quotes(
    tmp_path, toy_graph, monkeypatch
) -> None:
    run(tmp_path / "r", TINY, toy_graph).close()
    config = replace(TINY, iterations=40)
    with SearchLoop(
        tmp_path / "r", config, make_domain(toy_graph), OfflineProposer(), SerialExecutor()
    ) as loop:
        whole = loop.archive.candidates(valid_only=True)
        decoded: list[int] = []
        decode = Archive._candidate

        def counted(self, row):
            decoded.append(row["id"])
            return decode(self, row)

        monkeypatch.setattr(Archive, "_candidate", counted)
        for iteration in range(9, 41):
            decoded.clear()
            request = loop.request_for(iteration, np.random.default_rng([TINY.seed, iteration]))
            # the same draws on whole rows, as the loop made them before it read summaries
            rng = np.random.default_rng([TINY.seed, iteration])
            parent = thompson_parent(whole, rng, config.thompson_lambda)
            others = contrasts(whole, parent, rng, config.n_contrasts, config.contrast_temperature)
            mode = "improve" if rng.random() < config.p_improve else "diversify"
            assert (request.mode, request.parent, request.contrasts) == (
                mode,
                parent,
                tuple(others),
            )
            assert sorted(decoded) == sorted(c.id for c in (parent, *others))
            assert request.parent is not None and request.parent.code


class Interrupting(OfflineProposer):
    """Dies (like a kill) in the middle of one iteration, after proposing."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def propose(self, request, rng):
        proposal = super().propose(request, rng)
        if request.iteration == self.at:
            raise KeyboardInterrupt
        return proposal


def test_interrupted_iteration_is_redone_not_duplicated(tmp_path, toy_graph) -> None:
    with run(tmp_path / "straight", TINY, toy_graph) as archive:
        straight = fingerprint(archive)
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "r", TINY, toy_graph, Interrupting(at=5))
    with Archive(tmp_path / "r" / Archive.FILE_NAME, readonly=True) as archive:
        assert archive.last_iteration() == 4 and len(archive.candidates(valid_only=True)) == 5 + 4
    with run(tmp_path / "r", TINY, toy_graph) as archive:
        assert fingerprint(archive) == straight


def test_generation_only_is_all_warm_up(tmp_path, toy_graph) -> None:
    config = replace(TINY, iterations=5, generation_only=True)
    with run(tmp_path / "r", config, toy_graph) as archive:
        assert {row["mode"] for row in archive.iterations()} == {"warm-up"}
        assert all(c.parent_id is None for c in archive.candidates(valid_only=True))


def test_racing_stops_poor_candidates_and_keeps_full_fitness_for_valid_ones(
    tmp_path, toy_graph
) -> None:
    """A bar at the best protocol: candidates below it by two sems stop after the first
    round (status raced, never a parent or a contrast), the others get every seed."""
    config = replace(TINY, iterations=10, sims=6, race_sims=2, race_rank=1)
    assert config.races  # offline evolution: on by default
    with run(tmp_path / "r", config, toy_graph) as archive:
        rows = archive.candidates()
        raced = [c for c in rows if c.status == "raced"]
        valid = archive.candidates(valid_only=True)
        totals = archive.totals()
    assert raced and totals.raced == len(raced)
    assert all(c.seeds == [0, 1] and len(c.fitness_values) == 2 for c in raced)
    assert all(c.seeds == list(range(6)) for c in valid)
    raced_ids = {c.id for c in raced}
    for c in rows:
        assert c.parent_id not in raced_ids and not raced_ids & set(c.contrast_ids)


def recorded(archive: Archive, config: SearchConfig, graph) -> dict[int, list[int]]:
    """The seeds of each protocol's records, read back from the archive."""
    sim = config.sim_config()
    key = records.settings_hash(records.simulation_settings(sim, graph.sha256))
    rows = archive.records(key, [c.id for c in archive.candidates() if c.id is not None])
    out = {}
    for pid, row in rows.items():
        decoded = records.decode(row.data, sim.n_agents, sim.n_steps, sim.bottleneck)
        assert [r.seed for r in decoded] == list(row.seeds)
        out[pid] = list(row.seeds)
    return out


def test_valid_protocols_keep_records_of_the_seeds_asked_for(tmp_path, toy_graph) -> None:
    config = replace(TINY, iterations=10, sims=6, race_sims=2, race_rank=1, record_seeds=(1, 4, 9))
    with run(tmp_path / "r", config, toy_graph) as archive:
        rows = archive.candidates()
        got = recorded(archive, config, toy_graph)
    valid = [c.id for c in rows if c.status == "valid" and c.mode != "seed"]
    assert valid and sorted(got) == sorted(valid)  # not raced ones, nor baselines
    assert all(seeds == [1, 4] for seeds in got.values())  # seed 9 is not an evaluation seed
    assert any(c.status == "raced" for c in rows)
    # the records change nothing the search does: the same archive without them
    with run(tmp_path / "plain", replace(config, record_seeds=()), toy_graph) as plain:
        assert fingerprint(plain) == [
            (c.name, c.mode, c.status, c.code_sha256, c.parent_id, c.fitness_values) for c in rows
        ]
        assert plain.record_sizes() == (0, 0)


def test_a_resumed_run_keeps_the_records_of_every_finished_iteration(tmp_path, toy_graph) -> None:
    config = replace(TINY, iterations=6)
    with run(tmp_path / "r", replace(config, iterations=3), toy_graph) as archive:
        first = recorded(archive, config, toy_graph)
    with run(tmp_path / "r", config, toy_graph) as archive:
        got = recorded(archive, config, toy_graph)
        valid = [c.id for c in archive.candidates(valid_only=True) if c.mode != "seed"]
    assert first and set(first) < set(got) == set(valid)
    assert all(seeds == [0, 1] for seeds in got.values())


class Echo(OfflineProposer):
    """Proposes, after the warm-up, its parent's code with a comment added (other code, the
    same behaviour), unless the parent is a seeded baseline (which runs in-process, its
    source in the sandbox)."""

    def propose(self, request, rng):
        proposal = super().propose(request, rng)
        if request.parent is None or request.parent.mode == "seed":
            return proposal
        return replace(proposal, code=f"{request.parent.code}\n# echo {request.iteration}\n")


def test_a_twin_of_an_archived_protocol_stops_after_the_first_round(tmp_path, toy_graph) -> None:
    """Each echo repeats, on the race's first seeds, the results of the protocol it copies
    (or of an earlier one with the same results: a toy game has few): stopped there, a
    duplicate of it, with its first-round fitness."""
    config = replace(TINY, iterations=10, warmup=2, sims=6, race_sims=3, race_rank=50)
    with run(tmp_path / "r", config, toy_graph, Echo()) as archive:
        rows = {c.id: c for c in archive.candidates()}
    echoes = [c for c in rows.values() if c.parent_id and rows[c.parent_id].mode != "seed"]
    assert len(echoes) >= 3
    for c in echoes:
        original = rows[c.duplicate_of]
        assert c.status == "duplicate" and original.status == "valid"
        assert original.id <= c.parent_id
        assert c.seeds == [0, 1, 2] and c.fitness_values == original.fitness_values[:3]
        assert original.seeds == list(range(6))


def test_racing_is_off_for_llm_and_generation_only_runs_and_for_runs_begun_without_it(
    tmp_path, toy_graph
) -> None:
    assert not replace(TINY, generation_only=True).races
    assert replace(TINY, generation_only=True, racing=True).races
    assert not replace(TINY, racing=False).races
    # a run folder written before racing existed: its config has no racing key
    config = replace(TINY, iterations=4)
    run(tmp_path / "old", config, toy_graph).close()
    stored = tmp_path / "old" / "config.yaml"
    stored.write_text(
        "\n".join(line for line in stored.read_text().splitlines() if "racing" not in line)
    )
    resumed = open_run_dir(tmp_path / "old", None, {"iterations": 5})
    assert resumed.racing is False and not resumed.races


def llm_proposer(server: FakeChatServer, config: SearchConfig, **llm) -> LLMProposer:
    llm_config = LLMConfig(
        base_url=server.base_url, model="fake", backoff_initial=0.0, backoff_max=0.0, **llm
    )
    return LLMProposer(LLMClient(llm_config), PromptSettings.from_config(config))


def test_llm_run_with_broken_code_and_server_errors(tmp_path, toy_graph) -> None:
    config = replace(
        TINY,
        iterations=12,
        warmup=4,
        proposer="llm",
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="fake"),
    )
    author = ProtocolAuthor(seed=1)
    with FakeChatServer(author) as server:
        archive = run(tmp_path / "r", config, toy_graph, llm_proposer(server, config))
        n_requests = len(server.requests)
    with archive:
        totals = archive.totals()
        invalid = archive.candidates(status="invalid")
        valid = archive.candidates(valid_only=True)
        calls = archive.db.execute("SELECT SUM(requests), COUNT(*) FROM llm_calls").fetchone()
    assert totals.valid == 12 and totals.seeds == 5 and totals.iterations == 12
    assert sorted(author.broken_sent) == sorted(BROKEN_KINDS)
    assert totals.repairs == len(invalid) == 4
    errors = " | ".join(c.error for c in invalid)
    for expected in ("SyntaxError", "KeyError", "out of range", "no <code> section"):
        assert expected in errors
    repaired = [c for c in valid if c.mode == "repair"]
    assert len(repaired) == 4 and all(c.repair_of is not None for c in repaired)
    assert calls[0] == n_requests  # every HTTP request, 429s and 500s included
    assert calls[1] == 12 + 4  # one answered call per proposal and per repair
    assert totals.prompt_tokens > 0 and totals.completion_tokens > 0
    llm_rows = [c for c in archive_rows(tmp_path) if c.proposer == "llm"]
    assert sum(c.prompt_tokens for c in llm_rows) == totals.prompt_tokens
    assert all(c.prompt and c.answer and c.model == "fake" for c in llm_rows)
    warm = [c for c in llm_rows if c.iteration <= 4 and c.attempt == 0]
    assert all("Baseline: stochastic" in c.prompt for c in warm)


def archive_rows(tmp_path: Path):
    with Archive(tmp_path / "r" / Archive.FILE_NAME, readonly=True) as archive:
        return archive.candidates()


def test_spending_cap_stops_the_run_and_a_higher_cap_resumes_it(tmp_path, toy_graph) -> None:
    price = {"fake": ModelPrice(input_per_million=0.0, output_per_million=1e6)}  # $1/token
    config = replace(
        TINY,
        iterations=6,
        warmup=6,
        proposer="llm",
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="fake", max_cost=3.0, prices=price),
    )
    author = ProtocolAuthor(faults=False)

    def cheap(request):
        reply = author(request)
        return replace(reply, completion_tokens=1)

    with FakeChatServer(cheap) as server:
        run_dir = tmp_path / "r"
        config = open_run_dir(run_dir, config, {})
        proposer = llm_proposer(server, config, max_cost=3.0, prices=price)
        with SearchLoop(
            run_dir, config, make_domain(toy_graph), proposer, SerialExecutor()
        ) as loop:
            summary = loop.run()
        assert summary.completed == 3 and "spending cap" in summary.stopped
        assert len(server.requests) == 3
        with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
            assert archive.spent() == pytest.approx(3.0)
        more = LLMClient(replace(proposer.client.config, max_cost=10.0), spent=3.0)
        proposer2 = LLMProposer(more, PromptSettings.from_config(config))
        with SearchLoop(
            run_dir, config, make_domain(toy_graph), proposer2, SerialExecutor()
        ) as loop:
            assert loop.run().completed == 6


def run_until_the_endpoint_fails(tmp_path, toy_graph, **settings) -> RunSummary:
    """A run whose endpoint answers twice, then only 503s."""
    config = replace(
        TINY,
        proposer="llm",
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="fake"),
        **settings,
    )
    good = ProtocolAuthor(faults=False)

    def flaky(request):
        return good(request) if request.number < 2 else Reply.error(503, "maintenance")

    with FakeChatServer(flaky) as server:
        run_dir = tmp_path / "r"
        config = open_run_dir(run_dir, config, {})
        proposer = llm_proposer(server, config, max_retries=2)
        with SearchLoop(
            run_dir, config, make_domain(toy_graph), proposer, SerialExecutor()
        ) as loop:
            return loop.run()


def test_endpoint_down_stops_without_losing_anything(tmp_path, toy_graph) -> None:
    summary = run_until_the_endpoint_fails(tmp_path, toy_graph, iterations=4)
    assert summary.completed == 2 and "endpoint keeps failing" in summary.stopped
    assert "503" in summary.stopped


def test_duplicate_code_is_recorded_not_rescored(tmp_path, toy_graph) -> None:
    code = ProtocolAuthor().good_answer(0, repair=False)
    config = replace(
        TINY,
        iterations=2,
        warmup=2,
        proposer="llm",
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="fake"),
    )
    with FakeChatServer([code, code]) as server:
        archive = run(tmp_path / "r", config, toy_graph, llm_proposer(server, config))
    with archive:
        rows = [c for c in archive.candidates() if c.iteration > 0]
    assert [r.status for r in rows] == ["valid", "duplicate"]
    assert rows[1].duplicate_of == rows[0].id and rows[1].fitness_mean is None


def test_changed_recipes_refuse_to_resume(tmp_path, toy_graph) -> None:
    run(tmp_path / "r", replace(TINY, iterations=1, warmup=1), toy_graph).close()
    other = replace(toy_graph, sha256="different")
    with pytest.raises(Exception, match="recipes"):
        run(tmp_path / "r", replace(TINY, iterations=2, warmup=1), other)


def test_a_batch_scored_at_once_stores_what_serial_scoring_stores(tmp_path, toy_graph) -> None:
    """Generation-only proposals do not read the archive: batches of 3 scored on a shared
    pool store exactly what one-by-one scoring stores, in iteration order."""
    config = replace(TINY, iterations=7, generation_only=True)
    with run(tmp_path / "one", config, toy_graph) as archive:
        one_by_one = fingerprint(archive)
    with ProcessExecutor(2) as pool:
        batched = run(tmp_path / "three", replace(config, batch=3), toy_graph, executor=pool)
    with batched as archive:
        assert fingerprint(archive) == one_by_one
        assert [i["iteration"] for i in archive.iterations()] == list(range(1, 8))


def test_a_batch_proposes_from_the_archive_as_it_was_when_the_batch_began(
    tmp_path, toy_graph
) -> None:
    config = replace(TINY, iterations=8, warmup=4, batch=4)
    with run(tmp_path / "r", config, toy_graph) as archive:
        rows = {c.id: c for c in archive.candidates()}
    second = [c for c in rows.values() if c.iteration >= 5]
    assert {c.mode for c in second} <= {"improve", "diversify", "repair"}
    for c in second:  # iterations 5–8: parents and contrasts from iterations 0–4 only
        for used in (c.parent_id, *c.contrast_ids):
            assert rows[used].iteration <= 4


def test_a_repeat_inside_a_batch_is_a_duplicate_scored_once(tmp_path, toy_graph) -> None:
    code = ProtocolAuthor().good_answer(0, repair=False)
    config = replace(
        TINY,
        iterations=3,
        warmup=3,
        batch=3,
        proposer="llm",
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="fake"),
    )
    with FakeChatServer([code, code, code]) as server:
        archive = run(tmp_path / "r", config, toy_graph, llm_proposer(server, config))
    with archive:
        rows = [c for c in archive.candidates() if c.iteration > 0]
    assert [r.status for r in rows] == ["valid", "duplicate", "duplicate"]
    assert rows[1].duplicate_of == rows[2].duplicate_of == rows[0].id


def test_a_failing_endpoint_inside_a_batch_keeps_what_was_proposed(tmp_path, toy_graph) -> None:
    summary = run_until_the_endpoint_fails(tmp_path, toy_graph, iterations=6, batch=4)
    assert summary.completed == 2 and "endpoint keeps failing" in summary.stopped


def test_a_second_search_in_the_same_folder_is_refused_in_one_line(tmp_path, toy_graph) -> None:
    run_dir = tmp_path / "r"
    config = open_run_dir(run_dir, TINY, {})
    domain = make_domain(toy_graph)
    with SearchLoop(run_dir, config, domain, OfflineProposer(), SerialExecutor()):
        with pytest.raises(ConfigError, match="another search is running in this folder") as err:
            SearchLoop(run_dir, config, domain, OfflineProposer(), SerialExecutor())
        assert "\n" not in str(err.value) and f"pid {os.getpid()}" in str(err.value)
    # the first has ended: the folder is free again
    SearchLoop(run_dir, config, domain, OfflineProposer(), SerialExecutor()).close()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("[" * 1_000_000 + "]" * 1_000_000, "JSON nested too deep"),
        (b'{"choices": [{"message": {"content": "\xff"}}]}', "not JSON"),
    ],
    ids=["deep", "utf-8"],
)
def test_a_malformed_reply_to_the_search_stops_it_with_the_reason(
    tmp_path, toy_graph, body: str | bytes, reason: str
) -> None:
    config = replace(
        TINY, iterations=3, proposer="llm", llm=LLMConfig(base_url="http://x/v1", model="fake")
    )
    with FakeChatServer(lambda request: Reply(raw_body=body)) as server:
        run_dir = tmp_path / "r"
        config = open_run_dir(run_dir, config, {})
        proposer = llm_proposer(server, config, max_retries=1)
        with SearchLoop(
            run_dir, config, make_domain(toy_graph), proposer, SerialExecutor()
        ) as loop:
            summary = loop.run()
        assert len(server.requests) == 2  # retried once, like a server error
    assert summary.stopped is not None and summary.completed == 0
    assert "the model endpoint keeps failing" in summary.stopped
    assert f"reply refused: {reason}" in summary.stopped


# --- answers as real models write them, through real searches ------------------------------


def llm_run(tmp_path: Path, graph, script: list, iterations: int, **llm):
    """A warm-up-only LLM search answered by ``script``: its archive's rows of iterations,
    the requests the server got and the events of the run."""
    config = replace(
        TINY,
        iterations=iterations,
        warmup=iterations,
        proposer="llm",
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="fake", **llm),
    )
    events = []
    with FakeChatServer(script) as server:
        run_dir = tmp_path / "r"
        config = open_run_dir(run_dir, config, {})
        with SearchLoop(
            run_dir,
            config,
            make_domain(graph),
            llm_proposer(server, config, **llm),
            SerialExecutor(),
            on_event=events.append,
        ) as loop:
            loop.run()
        requests = server.requests
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        rows = [c for c in archive.candidates() if c.iteration > 0]
    return rows, requests, events


def test_a_search_archives_the_code_each_style_of_answer_meant(tmp_path, toy_graph) -> None:
    styles = [(Reply.text(text), code) for text, code in MEANT.values()]
    # a reasoning model whose server sent the whole answer as its reasoning
    styles.append((Reply.reasoned(requested(final(7))), final(7)))
    rows, _, _ = llm_run(tmp_path, toy_graph, [reply for reply, _ in styles], len(styles))
    assert [(r.name, r.status, r.error) for r in rows] == [
        (f"i{k:04d}", "valid", None) for k in range(1, len(styles) + 1)
    ]
    assert [r.code for r in rows] == [code for _, code in styles]
    assert rows[-1].answer == requested(final(7))  # what the model said is kept


CUT = requested(final(8))[:-300]  # stopped inside the class, by the token limit
REFUSED = {
    "two different protocols": (
        Reply.text(f"{requested(final(8))}\nAlternatively:\n```python\n{OTHER}\n```"),
        "2 different protocols",
    ),
    "SEARCH/REPLACE edits": (
        Reply.text("<code>\n<<<<<<< SEARCH\n[-3:]\n=======\n[-2:]\n>>>>>>> REPLACE\n</code>"),
        "gives edits (SEARCH/REPLACE blocks or a diff) instead of a program",
    ),
    "a cut-off answer": (
        Reply.text(CUT, finish_reason="length", completion_tokens=4096),
        "the answer was cut off at 4,096 tokens (max_tokens 4,096) before its code was complete",
    ),
    "a reasoning model cut off while thinking": (
        Reply.reasoned(
            "Let me weigh the pairs " * 50, finish_reason="length", completion_tokens=4096
        ),
        "the answer was cut off at 4,096 tokens (max_tokens 4,096) before its code was complete "
        "(all its text (1,150 characters) came in the reply's 'reasoning_content' field",
    ),
    "a reasoning model that answered in its reasoning without code": (
        Reply.reasoned("I would share successes with neighbours.", reasoning_field="reasoning"),
        "the answer has no <code> section: put the complete Python source of the "
        "TransmissionProtocol class between <code> and </code>; the reply's content was empty "
        "and all its text (40 characters) came in the reply's 'reasoning' field",
    ),
}


def test_refused_answers_say_why_in_the_archive_and_the_repair_prompt(tmp_path, toy_graph) -> None:
    script = []
    for k, (reply, _) in enumerate(REFUSED.values()):
        script += [reply, Reply.text(requested(final(10 + k)))]
    rows, requests, events = llm_run(tmp_path, toy_graph, script, len(REFUSED), max_tokens=4096)
    assert [(r.name, r.status) for r in rows] == [
        (name, status)
        for k in range(1, len(REFUSED) + 1)
        for name, status in ((f"i{k:04d}", "invalid"), (f"i{k:04d}r1", "valid"))
    ]
    for k, (_, message) in enumerate(REFUSED.values()):
        assert message in rows[2 * k].error
        assert rows[2 * k].code is None and rows[2 * k + 1].code == final(10 + k)
        repair = requests[2 * k + 1].last_user_text
        assert REPAIR_HEADING in repair and message in " ".join(repair.split())
    assert all(r.body.get("max_tokens") == 4096 for r in requests)
    # the cut-off answers are named in the run's output too
    notes = [note for event in events for note in event.notes]
    assert notes == [
        f"{name}: {rows[2 * k].error.removesuffix(CUT_OFF_REQUEST)}; raise --max-tokens "
        "(llm.max_tokens) if answers keep being cut off"
        for k, name in ((2, "i0003"), (3, "i0004"))
    ]
