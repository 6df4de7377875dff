"""Settings of LLM agents: the chat endpoint (shared with the search), concurrency, cache.

Kept apart from :mod:`tpdisc.agents.llm.agent` so that a configuration can be built, validated and
serialised without starting a client. It travels inside :class:`~tpdisc.agents.base.
AgentParams` (field ``llm``) to every simulation, and records the name of the API key's
environment variable, never the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpdisc.config_tree import decode, encode_fields
from tpdisc.domain.data import cache_dir
from tpdisc.errors import ConfigError
from tpdisc.llm_client import LLMConfig

CACHE_FILE = "llm-agent-responses.sqlite"


@dataclass(frozen=True)
class LLMAgentConfig:
    """How LLM agents reach their model.

    ``concurrency`` bounds the requests in flight at once *per simulation*: all LLM agents of
    a step ask together, at most this many at a time (a process executor runs several
    simulations side by side, each with its own limit). ``cache_path`` None means the file
    ``llm-agent-responses.sqlite`` in the user cache (``TPDISC_CACHE`` moves it);
    ``cache=False`` sends every request. ``client.max_cost``, if set, caps the spending of
    each simulation.
    """

    client: LLMConfig
    concurrency: int = 8
    cache: bool = True
    cache_path: str | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(f"LLM concurrency must be at least 1, got {self.concurrency}")
        if self.cache_path is not None and not str(self.cache_path).strip():
            raise ConfigError("LLM cache path is empty; leave it unset for the user cache")

    def resolved_cache_path(self) -> Path | None:
        """Where responses are cached (None when caching is off)."""
        if not self.cache:
            return None
        return Path(self.cache_path) if self.cache_path else cache_dir() / CACHE_FILE

    def to_dict(self) -> dict[str, Any]:
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "llm") -> LLMAgentConfig:
        return decode(cls, data, where)
