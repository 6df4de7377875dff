"""The on-disk cache of LLM agents' answers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tpdisc.agents.llm.cache import CachedAnswer, ResponseCache, cache_key
from tpdisc.errors import ConfigError

MESSAGES = [{"role": "system", "content": "rules"}, {"role": "user", "content": "state"}]


def key(**changes: object) -> str:
    args: dict = {
        "model": "m",
        "messages": MESSAGES,
        "temperature": None,
        "max_tokens": None,
        "sample": "s",
    }
    args.update(changes)
    model, messages = args.pop("model"), args.pop("messages")
    return cache_key(model, messages, **args)


def test_key_depends_on_everything_that_changes_the_answer() -> None:
    base = key()
    assert key() == base
    assert key(messages=[dict(m) for m in MESSAGES]) == base
    others = {
        key(model="other"),
        key(messages=[*MESSAGES, {"role": "assistant", "content": "x"}]),
        key(messages=[MESSAGES[0], {"role": "user", "content": "state!"}]),
        key(temperature=0.7),
        key(max_tokens=100),
        key(sample="t"),
    }
    assert base not in others and len(others) == 6


def test_put_get_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    cache = ResponseCache(path)
    assert cache.get("k") is None
    cache.put("k", "m", CachedAnswer("<answer>a + b</answer>", 12, 3))
    cache.close()
    again = ResponseCache(path)
    assert again.get("k") == CachedAnswer("<answer>a + b</answer>", 12, 3)
    assert len(again) == 1
    again.close()


def test_first_answer_stored_wins(tmp_path: Path) -> None:
    # Two simulations that asked the same question at once both go on with one answer.
    one, other = ResponseCache(tmp_path / "c.sqlite"), ResponseCache(tmp_path / "c.sqlite")
    assert one.put("k", "m", CachedAnswer("first", 1, 1)) == CachedAnswer("first", 1, 1)
    assert other.put("k", "m", CachedAnswer("second", 2, 2)) == CachedAnswer("first", 1, 1)
    assert other.get("k") == CachedAnswer("first", 1, 1)
    one.close()
    other.close()


def test_threads_share_one_cache(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    def work(i: int) -> None:
        for j in range(20):
            cache.put(f"{i}-{j}", "m", CachedAnswer(str(j), j, 1))
            assert cache.get(f"{i}-{j}") == CachedAnswer(str(j), j, 1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 120
    cache.close()


def test_unusable_file_is_a_one_line_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-db.sqlite"
    bad.write_text("this is not SQLite " * 100)
    with pytest.raises(ConfigError, match=r"LLM response cache .*not-a-db\.sqlite"):
        ResponseCache(bad)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="LLM response cache"):
        ResponseCache(blocker / "cache.sqlite")
