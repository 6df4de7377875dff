"""Config trees to and from the mappings of YAML files: every key and type checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tpdisc.config_tree import (
    decode,
    dump_yaml,
    encode,
    flatten,
    merged,
    read_yaml,
    with_value,
    write_yaml,
)
from tpdisc.errors import ConfigError
from tpdisc.sim.config import EvaluationConfig, SimConfig


@dataclass(frozen=True)
class Inner:
    rate: float = 0.5
    name: str = "x"


@dataclass(frozen=True)
class Outer:
    count: int = 1
    flag: bool = False
    pair: tuple[str, int] = ("a", 1)
    names: tuple[str, ...] = ()
    limit: int | None = None
    inner: Inner = field(default_factory=Inner)
    table: dict[str, float] = field(default_factory=dict)


def test_round_trip_through_yaml(tmp_path: Path) -> None:
    value = Outer(3, True, ("b", 2), ("p", "q"), 7, Inner(1.5, "y"), {"k": 2.0})
    write_yaml(tmp_path / "o.yaml", value)
    assert decode(Outer, read_yaml(tmp_path / "o.yaml")) == value
    assert not (tmp_path / "o.yaml.part").exists()


def test_numbers_are_read_as_the_field_says() -> None:
    assert decode(Outer, {"inner": {"rate": 2}}).inner.rate == 2.0
    assert isinstance(decode(Outer, {"inner": {"rate": 2}}).inner.rate, float)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"count": "3"}, "f.yaml: count: expected a whole number, got '3'"),
        ({"count": True}, "f.yaml: count: expected a whole number, got True"),
        ({"flag": "yes"}, "f.yaml: flag: expected true or false"),
        ({"inner": {"rate": "fast"}}, "f.yaml: inner.rate: expected a number, got 'fast'"),
        ({"inner": {"speed": 1}}, "f.yaml: inner: unknown setting speed"),
        ({"inner": 3}, "f.yaml: inner: expected a mapping of settings, got 3"),
        ({"pair": ["a"]}, r"f.yaml: pair: expected a list of 2"),
        ({"names": "p"}, "f.yaml: names: expected a list"),
        ({"table": {"k": "v"}}, "f.yaml: table.k: expected a number"),
        ({"cout": 1}, r"f.yaml: unknown setting cout \(known: count, flag"),
    ],
)
def test_mistakes_are_one_line_naming_the_key(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        decode(Outer, data, "f.yaml")


def test_validation_of_the_classes_themselves_is_reported_with_the_file() -> None:
    # The temperature lives in the empowerment model's section (sim.params.empowerment).
    expected = r"e\.yaml: sim\.params\.empowerment: empowerment model beta=-1\.0: expected a"
    with pytest.raises(ConfigError, match=expected):
        decode(EvaluationConfig, {"sim": {"params": {"empowerment": {"beta": -1}}}}, "e.yaml")


def test_text_forms_of_populations_and_choices() -> None:
    config = decode(
        SimConfig,
        {"population": "empowerment:2,stochastic:3", "params": {"empowerment": "owned=zero"}},
    )
    assert config.agents == (("empowerment", 2), ("stochastic", 3)) and config.n_agents == 5
    assert config.params.empowerment.owned == "zero"
    assert decode(SimConfig, encode(config)) == config


def test_paths_and_unreadable_files(tmp_path: Path) -> None:
    assert flatten({"a": {"b": 1, "c": {"d": None}}, "e": []}) == {"a.b": 1, "a.c.d": None, "e": []}
    assert with_value({"a": {"b": 1}}, "a.c.d", 2) == {"a": {"b": 1, "c": {"d": 2}}}
    (tmp_path / "bad.yaml").write_text("a: [\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: cannot read the config"):
        read_yaml(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        read_yaml(tmp_path / "list.yaml")


def test_the_default_evaluation_prints_and_reads_back() -> None:
    import yaml

    text = dump_yaml(EvaluationConfig())
    assert decode(EvaluationConfig, yaml.safe_load(text)) == EvaluationConfig()


def test_merged_puts_nested_settings_in_and_takes_keys_whole() -> None:
    base = {"sim": {"n_steps": 5, "params": {"p_social": 0.5}}, "llm": None}
    changes = {"sim": {"params": {"beta": 2.0}}, "llm": {"prices": {"gpt-4.1": {"input": 1}}}}
    assert merged(base, changes) == {
        "sim": {"n_steps": 5, "params": {"p_social": 0.5, "beta": 2.0}},
        "llm": {"prices": {"gpt-4.1": {"input": 1}}},
    }
