"""tpdisc data: install the recipe file once, see which one commands use."""

from __future__ import annotations

import json
import os
import resource
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from typer.testing import CliRunner

from tests.conftest import PAYLOAD, PAYLOAD_SHA, TOY, Server
from tpdisc.cli import app
from tpdisc.domain import data

runner = CliRunner()


def test_install_checks_the_file_and_later_commands_find_it(tmp_path, monkeypatch) -> None:
    public = tmp_path / "alchemy2.json"
    public.write_text(json.dumps(TOY))
    monkeypatch.setattr(data, "SHA256", data.hashlib.sha256(public.read_bytes()).hexdigest())
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TPDISC_RECIPES", raising=False)
    assert "none installed" in runner.invoke(app, ["data", "show"]).output
    result = runner.invoke(app, ["data", "install", str(public)])
    assert result.exit_code == 0, result.output
    cached = tmp_path / "cache" / "alchemy2.json"
    assert cached.read_bytes() == public.read_bytes()
    assert data.locate_recipes(allow_download=False) == cached
    assert "installed" in runner.invoke(app, ["data", "show"]).output


def test_another_file_is_refused_in_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "cache"))
    other = tmp_path / "mine.json"
    other.write_text("{}")
    result = runner.invoke(app, ["data", "install", str(other)])
    assert result.exit_code == 1 and "is not the public Little Alchemy 2 file" in result.stderr
    assert not (tmp_path / "cache" / "alchemy2.json").exists()
    gone = runner.invoke(app, ["data", "install", str(tmp_path / "none.json")])
    assert gone.exit_code == 1 and "cannot read" in gone.stderr


def test_the_real_file_installs(tmp_path, monkeypatch, real_recipes: Path) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path))
    assert data.install(real_recipes) == tmp_path / "alchemy2.json"


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail instead of hanging when an install waits on a FIFO."""

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("data install still running after 20 s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_only_a_regular_file_is_read(tmp_path, monkeypatch, deadline) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "cache"))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, kind in [
        (fifo, "a FIFO"),
        ("/dev/zero", "a character device"),
        (tmp_path, "a folder"),
    ]:
        result = runner.invoke(app, ["data", "install", str(path)])
        assert result.exit_code == 1, result.output
        assert result.stderr == f"error: {path}: not a regular file ({kind})\n"


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, monkeypatch, deadline) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path / "cache"))
    huge = tmp_path / "huge.json"
    with huge.open("wb") as stream:
        stream.truncate(3 << 30)  # sparse: 3 GB that the old install read into memory
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = runner.invoke(app, ["data", "install", str(huge)])
    assert result.exit_code == 1 and "more than the 16,000,000 allowed" in result.stderr
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000
    assert not list((tmp_path / "cache").glob("*"))


@pytest.mark.parametrize(
    ("variable", "command"),
    [
        ("TPDISC_CACHE", ["data", "show"]),
        ("TPDISC_CACHE", ["evaluate", "asocial", "--sims", "1", "--steps", "2"]),
        ("TPDISC_RECIPES", ["evaluate", "asocial", "--sims", "1", "--steps", "2"]),
    ],
)
def test_a_path_from_the_environment_that_cannot_be_one_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, command: list[str]
) -> None:
    (tmp_path / "file").write_text("x")
    wrong = tmp_path / "file" if variable == "TPDISC_CACHE" else tmp_path
    monkeypatch.delenv("TPDISC_RECIPES", raising=False)  # the cache is looked at after it
    monkeypatch.setenv(variable, str(wrong))
    serial = ["--executor", "serial"] if command[0] == "evaluate" else []
    result = runner.invoke(app, [*command, *serial])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.stderr.startswith(f"error: ${variable}: {wrong}: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_install_without_a_path_downloads_and_checks_then_keeps_it(
    isolated: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "URL", server.url)
    monkeypatch.setattr(data, "SHA256", PAYLOAD_SHA)
    first = runner.invoke(app, ["data", "install"])
    assert first.exit_code == 0, first.output
    assert "downloaded from" in first.stdout and str(isolated / "alchemy2.json") in first.stdout
    assert (isolated / "alchemy2.json").read_bytes() == PAYLOAD
    again = runner.invoke(app, ["data", "install"])  # a checked copy is there: no download
    assert again.exit_code == 0 and "already installed" in again.stdout
    assert len(server.requests) == 1


def test_a_download_that_fails_its_check_is_one_line_and_keeps_nothing(
    isolated: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data, "URL", server.url)  # the toy file is not the public one
    result = runner.invoke(app, ["data", "install"])
    assert result.exit_code == 1 and "does not match" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (isolated / "alchemy2.json").exists()


def test_or_download_takes_the_local_copy_where_there_is_one_and_downloads_elsewhere(
    isolated: Path, server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The README's first command: ../shared/data/alchemy2.json in this repository's
    layout, the download in a clone elsewhere."""
    monkeypatch.setattr(data, "URL", server.url)
    monkeypatch.setattr(data, "SHA256", PAYLOAD_SHA)
    local = tmp_path / "shared" / "alchemy2.json"
    missing = runner.invoke(app, ["data", "install", str(local), "--or-download"])
    assert missing.exit_code == 0, missing.output
    assert "no such file; downloading the public copy instead" in missing.stderr
    assert len(server.requests) == 1
    (isolated / "alchemy2.json").unlink()
    local.parent.mkdir()
    local.write_bytes(PAYLOAD)
    present = runner.invoke(app, ["data", "install", str(local), "--or-download"])
    assert present.exit_code == 0 and "checked and installed" in present.stdout
    assert len(server.requests) == 1  # the local copy, no download
    strict = runner.invoke(app, ["data", "install", str(tmp_path / "none.json")])
    assert strict.exit_code == 1 and "cannot read" in strict.stderr  # without the flag
