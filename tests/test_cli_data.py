"""tpdisc data: install the recipe file once, see which one commands use."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import TOY
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


@pytest.mark.skipif(not os.environ.get("TPDISC_RECIPES"), reason="needs the real recipe file")
def test_the_real_file_installs(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TPDISC_CACHE", str(tmp_path))
    assert data.install(Path(os.environ["TPDISC_RECIPES"])) == tmp_path / "alchemy2.json"
