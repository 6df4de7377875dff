"""Shared fixtures: small hand-made recipe graphs, and the real one where configured; the
markers of the slow groups of tests; the check that no test builds the real game's prior."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import tpdisc.agents.empowerment.prior.store as prior_store
from tests.prior_guard import CacheWatch, refusing_builds
from tpdisc.domain import data
from tpdisc.domain.recipes import RecipeGraph, load_recipes, parse_wordcraft
from tpdisc.errors import TpdiscError

# A toy game: base elements make a few things, which make a few more.
TOY = {
    "entities": {
        "air": {"id": 0, "recipes": []},
        "earth": {"id": 1, "recipes": []},
        "fire": {"id": 2, "recipes": []},
        "water": {"id": 3, "recipes": []},
        "steam": {"id": 4, "recipes": [["fire", "water"], ["air", "water"]]},
        "mud": {"id": 5, "recipes": [["earth", "water"]]},
        "lava": {"id": 6, "recipes": [["earth", "fire"]]},
        "pressure": {"id": 7, "recipes": [["air", "air"]]},
        "energy": {"id": 8, "recipes": [["fire", "fire"], ["air", "fire"]]},
        "stone": {"id": 9, "recipes": [["lava", "water"], ["air", "lava"]]},
        "obsidian": {"id": 10, "recipes": [["lava", "water"]]},
        "brick": {"id": 11, "recipes": [["mud", "fire"], ["stone", "mud"]]},
        "geyser": {"id": 12, "recipes": [["steam", "earth"]]},
        "wall": {"id": 13, "recipes": [["brick", "brick"]]},
        "house": {"id": 14, "recipes": [["wall", "wall"]]},
        "island": {"id": 15, "recipes": [["island", "water"]]},
    }
}


# The slow groups, by file (``pytest -m "not browser and not ray"`` leaves two out); each
# marker is described in pyproject.toml.
SLOW_GROUPS: dict[str, tuple[str, ...]] = {
    "browser": ("report/test_browser.py", "study/test_browser.py"),
    "ray": ("executors/test_ray.py",),
    "numba": ("agents/test_compiled.py", "executors/test_worker_server.py", "cli/test_entry.py"),
    "prior": ("agents/empowerment/prior/test_build.py", "agents/empowerment/prior/test_store.py"),
}
_GROUP_OF = {path: marker for marker, paths in SLOW_GROUPS.items() for path in paths}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        try:
            path = item.path.relative_to(here).as_posix()
        except ValueError:
            continue
        marker = _GROUP_OF.get(path)
        if marker is not None:
            item.add_marker(marker)


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Tests never read or write the user's cache (priors, LLM answers): one temporary
    cache per session, inherited by worker processes. Empowerment agents, the default,
    build their prior of a toy graph there in a few seconds; no test may need the real
    game's prior (minutes to build)."""
    path = tmp_path_factory.mktemp("tpdisc-cache")
    saved = os.environ.get("TPDISC_CACHE")
    os.environ["TPDISC_CACHE"] = str(path)
    yield path
    if saved is None:
        os.environ.pop("TPDISC_CACHE", None)
    else:
        os.environ["TPDISC_CACHE"] = saved


_WATCH = CacheWatch()


@pytest.fixture(autouse=True)
def no_real_prior(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test that builds the real game's prior, in this process or any other (see
    tests/prior_guard.py). Set up with the test's own ``monkeypatch``, it is torn down
    before that undoes the test's changes, so a cache the test moved to is looked at too."""
    refused: list[str] = []
    monkeypatch.setattr(
        prior_store, "build_prior", refusing_builds(prior_store.build_prior, refused)
    )
    yield
    caches = {isolated_cache, Path(os.environ.get("TPDISC_CACHE", isolated_cache))}
    found = refused + _WATCH.new_violations(caches)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


@pytest.fixture
def toy_graph() -> RecipeGraph:
    return parse_wordcraft(TOY, "toy")


# Tests that need the real recipe file skip without it, all with this one reason; under
# TPDISC_REQUIRE_RECIPES=1 (.ci/run) they fail instead, as the browser tests do without
# Chromium under TPDISC_REQUIRE_CHROMIUM.
NO_RECIPES = (
    "needs the Little Alchemy 2 recipe file: set TPDISC_RECIPES to it, or keep a copy with "
    "'tpdisc data install'"
)


def _real_recipes() -> Path | None:
    """The real recipe file: $TPDISC_RECIPES, else the copy 'tpdisc data install' keeps in
    the user's cache (read before the tests move the cache to a temporary folder)."""
    given = os.environ.get(data.ENV_VAR)
    if given:
        return Path(given).absolute() if Path(given).is_file() else None
    try:
        return data.installed()
    except TpdiscError:  # a cache path that cannot be one: no copy there
        return None


REAL_RECIPES = _real_recipes()


@pytest.fixture(autouse=True, scope="session")
def recipes_for_commands() -> Iterator[None]:
    """Commands the tests run without --recipes (and their subprocesses) find the real file
    where the tests do, the user's cache's copy included."""
    saved = os.environ.get(data.ENV_VAR)
    if REAL_RECIPES is not None:
        os.environ[data.ENV_VAR] = str(REAL_RECIPES)
    yield
    if saved is None:
        os.environ.pop(data.ENV_VAR, None)
    else:
        os.environ[data.ENV_VAR] = saved


@pytest.fixture(scope="session")
def real_recipes() -> Path:
    """The real recipe file, or the test skips (fails under TPDISC_REQUIRE_RECIPES=1)."""
    if REAL_RECIPES is None:
        if os.environ.get("TPDISC_REQUIRE_RECIPES") == "1":
            pytest.fail(f"TPDISC_REQUIRE_RECIPES=1, but this test {NO_RECIPES}", pytrace=False)
        pytest.skip(NO_RECIPES)
    return REAL_RECIPES


@pytest.fixture(scope="session")
def real_graph(real_recipes: Path) -> RecipeGraph:
    return load_recipes(real_recipes)


# The toy game as a recipe file a local server hands out, for the download's tests.
PAYLOAD = json.dumps(TOY).encode()
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


@dataclass
class Server:
    url: str
    requests: list[str] = field(default_factory=list)
    body: bytes = PAYLOAD
    status: int = 200


@pytest.fixture
def server() -> Iterator[Server]:
    """A one-file HTTP server on 127.0.0.1 that records the paths asked for."""
    state = Server(url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append(self.path)
            self.send_response(state.status)
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/datasets/{data.FILE_NAME}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $TPDISC_RECIPES, an empty cache of our own, no proxy between us and 127.0.0.1,
    and a download URL that cannot reach the network if a test forgets to set one."""
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setattr(data, "URL", "http://127.0.0.1:9/unreachable.json")
    cache = tmp_path / "cache"
    monkeypatch.setenv("TPDISC_CACHE", str(cache))
    return cache
