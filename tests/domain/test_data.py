"""Where the recipe data comes from: --recipes, $TPDISC_RECIPES, the user cache, then a
checked download, served here by a local HTTP server (the tests never touch the network)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.conftest import PAYLOAD, PAYLOAD_SHA, TOY, Server
from tests.threads import failures_in_threads
from tpdisc.domain import data
from tpdisc.domain.data import FILE_NAME, default_graph, download, locate_recipes
from tpdisc.errors import ConfigError, RecipeDataError


def write_toy(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(PAYLOAD)
    return path


def test_cache_dir_follows_environment(isolated: Path) -> None:
    assert data.cache_dir() == isolated


def test_explicit_path_comes_first(isolated: Path, tmp_path: Path, monkeypatch) -> None:
    explicit, env = tmp_path / "explicit.json", write_toy(tmp_path / "env.json")
    write_toy(isolated / FILE_NAME)
    monkeypatch.setenv(data.ENV_VAR, str(env))
    assert locate_recipes(explicit) == explicit  # taken as given, even if missing
    assert locate_recipes(str(explicit)) == explicit


def test_environment_before_cache(isolated: Path, tmp_path: Path, monkeypatch) -> None:
    env = write_toy(tmp_path / "env.json")
    write_toy(isolated / FILE_NAME)
    monkeypatch.setenv(data.ENV_VAR, str(env))
    assert locate_recipes() == env


def test_cache_before_download(isolated: Path, server: Server, monkeypatch) -> None:
    monkeypatch.setattr(data, "URL", server.url)
    cached = write_toy(isolated / FILE_NAME)
    assert locate_recipes() == cached
    assert server.requests == []


def test_download_into_cache_with_checksum(isolated: Path, server: Server, monkeypatch) -> None:
    monkeypatch.setattr(data, "URL", server.url)
    monkeypatch.setattr(data, "SHA256", PAYLOAD_SHA)
    path = locate_recipes()
    assert path == isolated / FILE_NAME
    assert path.read_bytes() == PAYLOAD
    assert server.requests == [f"/datasets/{FILE_NAME}"]
    assert not list(isolated.glob("*.part"))
    # the next lookup finds the cached copy and does not download again
    graph = default_graph()
    assert graph.sha256 == PAYLOAD_SHA and graph.n_elements == len(TOY["entities"])
    assert len(server.requests) == 1


def test_download_checksum_mismatch_stores_nothing(isolated: Path, server: Server) -> None:
    server.body = PAYLOAD + b" "
    with pytest.raises(RecipeDataError) as err:
        download(server.url, isolated / FILE_NAME, PAYLOAD_SHA)
    message = str(err.value)
    assert server.url in message
    assert hashlib.sha256(server.body).hexdigest() in message and PAYLOAD_SHA in message
    assert not isolated.exists() or not any(isolated.iterdir())


def test_locate_reports_checksum_mismatch(isolated: Path, server: Server, monkeypatch) -> None:
    monkeypatch.setattr(data, "URL", server.url)
    # the real checksum, which the toy payload does not have
    with pytest.raises(RecipeDataError, match=f"does not match {data.SHA256}"):
        locate_recipes()
    assert not (isolated / FILE_NAME).exists()


def test_failure_message_says_what_was_tried(isolated: Path, server: Server, monkeypatch) -> None:
    server.status = 404
    monkeypatch.setattr(data, "URL", server.url)
    with pytest.raises(RecipeDataError) as err:
        locate_recipes()
    message = str(err.value)
    assert "\n" not in message
    assert "no --recipes path" in message
    assert "$TPDISC_RECIPES unset" in message
    assert str(isolated / FILE_NAME) in message
    assert f"download of {server.url} failed" in message and "404" in message
    assert "--recipes PATH or TPDISC_RECIPES=PATH" in message
    assert "'tpdisc data install PATH'" in message  # the lasting fix, named
    assert server.requests == [f"/datasets/{FILE_NAME}"]


def test_unreachable_server(isolated: Path) -> None:
    with pytest.raises(RecipeDataError, match=r"download of http://127\.0\.0\.1:9/.* failed"):
        locate_recipes()


def test_download_can_be_disabled(isolated: Path, server: Server, monkeypatch) -> None:
    monkeypatch.setattr(data, "URL", server.url)
    with pytest.raises(RecipeDataError, match=r"and download disabled; keep a local copy"):
        locate_recipes(allow_download=False)
    assert server.requests == []


def test_default_url_and_checksum_are_the_public_copy() -> None:
    assert data.URL.endswith("/minqi/wordcraft/main/datasets/alchemy2.json")
    assert data.SHA256 == "757422df36f8805b1a56c418e613c6418c905b0956e6f2fb3dff78569933d25d"


def test_missing_explicit_file_is_reported(isolated: Path, tmp_path: Path) -> None:
    with pytest.raises(RecipeDataError, match=r"nope\.json: cannot read"):
        default_graph(tmp_path / "nope.json")


def test_a_cache_variable_naming_a_file_is_one_line(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    monkeypatch.setenv("TPDISC_CACHE", str(file))
    with pytest.raises(ConfigError, match=rf"^\$TPDISC_CACHE: {file}: not a folder \(a file\)$"):
        data.cache_dir()
    monkeypatch.delenv("TPDISC_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(file))
    with pytest.raises(ConfigError, match=r"^the cache \(from \$XDG_CACHE_HOME\): .*not a folder"):
        data.cache_dir()


def test_a_recipes_variable_naming_a_folder_is_one_line(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path))
    with pytest.raises(
        ConfigError, match=r"^\$TPDISC_RECIPES: .*: not a regular file \(a folder\)$"
    ):
        locate_recipes()


def test_two_installs_at_once_both_leave_the_whole_file(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "SHA256", PAYLOAD_SHA)
    source = write_toy(tmp_path / "toy.json")
    assert failures_in_threads(lambda: data.install(source), 8) == []
    assert (isolated / FILE_NAME).read_bytes() == PAYLOAD
    assert [p.name for p in isolated.iterdir()] == [FILE_NAME]  # no temporary left
