"""What the user types (a baseline name or a .py path) becomes a protocol spec."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tpdisc.errors import ConfigError, ProtocolError
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.protocols.resolve import resolve_protocol, unique_names

GOOD = "class P:\n    def share_memories(self, i_step, agent_states):\n        return {}\n"


def test_baseline_names() -> None:
    spec = resolve_protocol("small-world")
    assert isinstance(spec, BaselineProtocol) and spec.name == "small-world"


def test_protocol_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text(GOOD)
    spec = resolve_protocol(str(path), trusted=True)
    assert isinstance(spec, SourceProtocol)
    assert (spec.name, spec.origin, spec.source, spec.trusted) == ("mine", str(path), GOOD, True)
    assert resolve_protocol(str(path)).trusted is False


def test_a_file_named_like_a_baseline_needs_a_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paired").write_text(GOOD)
    assert isinstance(resolve_protocol("paired"), BaselineProtocol)
    assert isinstance(resolve_protocol("./paired"), SourceProtocol)


def test_trusted_file_that_does_not_load_fails_early(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("class P(:\n    pass\n")
    with pytest.raises(ProtocolError, match="^" + re.escape(f"{path}: SyntaxError at line 1")):
        resolve_protocol(str(path), trusted=True)


def test_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.py: no such protocol file"):
        resolve_protocol(str(tmp_path / "missing.py"))
    with pytest.raises(ConfigError, match="no such protocol file"):
        resolve_protocol(str(tmp_path))  # a directory
    with pytest.raises(
        ConfigError, match=r"^unknown protocol 'zzz': not a baseline \(asocial, .*\)"
    ):
        resolve_protocol("zzz")


def test_a_near_miss_suggests_the_closest_baseline_and_still_lists_them() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_protocol("dynamc")
    assert str(caught.value).startswith(
        "unknown protocol 'dynamc' (did you mean 'dynamic'?): not a baseline (asocial, "
    )


def test_a_name_whose_py_file_exists_suggests_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_protocol.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        ConfigError,
        match=r"^unknown protocol 'my_protocol' \(did you mean the file my_protocol\.py\?\)$",
    ):
        resolve_protocol("my_protocol")


def test_unique_names(tmp_path: Path) -> None:
    specs = []
    for folder in ("a", "b", "c"):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "proto.py"
        path.write_text(GOOD)
        specs.append(resolve_protocol(str(path)))
    specs.append(resolve_protocol("paired"))
    assert unique_names(specs) == ["proto", "proto#2", "proto#3", "paired"]
