"""Configuration files are untrusted input: bombs, depth, infinities and odd files are
refused in one line, quickly and in little memory, before anything walks the tree."""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

import pytest
import yaml

from tpdisc.config_tree import decode, read_yaml
from tpdisc.errors import ConfigError
from tpdisc.sim.run import EvaluationConfig
from tpdisc.yamlsafe import MAX_VALUES, YamlRefused, load_text, read_yaml_file


def laughs(levels: int = 9, key: str = "a") -> str:
    """The "billion laughs": each level nine aliases of the one below (9**9 values)."""
    lines = [f'{key}0: &{key}0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"{key}{i}: &{key}{i} [" + ",".join([f"*{key}{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_plain_documents_read_as_safe_load_reads_them() -> None:
    text = "a: 1\nb: [x, 2.5, null, true]\nc: {d: &v [1, 2], e: *v}\nf: 2026-01-02\n"
    assert load_text(text) == yaml.safe_load(text)
    assert load_text("") is None
    assert load_text("<<: {a: 1}\nb: 2\n") == {"a": 1, "b": 2}


def test_an_alias_bomb_is_refused_while_composing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(laughs())
    assert path.stat().st_size < 1000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(YamlRefused, match=rf"bomb\.yaml: line \d+: more than {MAX_VALUES:,}"):
        read_yaml_file(path)
    # expanded, it would take gigabytes: refused while composing, it takes next to nothing
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000


def test_a_bomb_under_a_known_key_is_refused_before_any_check(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text("sim:\n  n_agents: &top [" + ",".join(["*a8"] * 9) + "]\n" + laughs())
    with pytest.raises(ConfigError, match=r"^\S+bomb\.yaml: cannot read the config \(line"):
        decode(EvaluationConfig, read_yaml(path), str(path))


def test_a_small_bomb_is_shown_by_an_excerpt_only() -> None:
    # Under the cap: read, then refused by its key with an excerpt, not its 400 KB repr.
    data = load_text(laughs(4) + "n_agents: &big [" + ",".join(["*a3"] * 9) + "]\n")
    with pytest.raises(ConfigError) as info:
        decode(EvaluationConfig, {"sim": {"n_agents": data["n_agents"]}}, "f.yaml")
    assert len(str(info.value)) < 200
    assert str(info.value).startswith("f.yaml: sim.n_agents: expected a whole number, got [[")


def test_recursive_aliases_and_unknown_ones_are_refused() -> None:
    with pytest.raises(YamlRefused, match="inside what it names"):
        load_text("a: &x [1, *x]\n")
    with pytest.raises(YamlRefused, match=r"line 1: unknown alias \*nowhere"):
        load_text("a: *nowhere\n")
    with pytest.raises(YamlRefused, match="not valid YAML"):
        load_text("a: [\n")


@pytest.mark.parametrize("nesting", ["[" * 3000 + "]" * 3000, "{a: " * 3000 + "1" + "}" * 3000])
def test_deep_nesting_is_refused_without_recursion(nesting: str) -> None:
    with pytest.raises(YamlRefused, match="line 1: nested more than 64 deep"):
        load_text(f"a: {nesting}\n", "deep.yaml")


@pytest.mark.parametrize("value", [".inf", "-.Inf", ".nan", "1.0e+999"])
def test_numbers_must_be_finite(value: str) -> None:
    with pytest.raises(YamlRefused, match=r"line 2: .* is not a finite number"):
        load_text(f"sandbox:\n  time_limit: {value}\n")


def test_a_huge_integer_is_one_line() -> None:
    with pytest.raises(YamlRefused, match="a value cannot be read"):
        load_text("a: " + "9" * 10_000 + "\n")


def test_odd_files_are_refused_without_reading_them(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(YamlRefused, match=r"fifo\.yaml: not a regular file \(a FIFO\)"):
        read_yaml_file(fifo)  # would block forever if opened to read
    with pytest.raises(YamlRefused, match="not a regular file"):
        read_yaml_file("/dev/zero")
    with pytest.raises(YamlRefused, match="not a regular file"):
        read_yaml_file(tmp_path)
    big = tmp_path / "big.yaml"
    big.write_text("a: '" + "x" * 1_000_001 + "'\n")
    with pytest.raises(YamlRefused, match="more than the 1,000,000 allowed"):
        read_yaml_file(big)
    (tmp_path / "latin1.yaml").write_bytes(b"a: \xe9\n")
    with pytest.raises(YamlRefused, match="not UTF-8"):
        read_yaml_file(tmp_path / "latin1.yaml")
    with pytest.raises(YamlRefused, match="expected one YAML document"):
        load_text("a: 1\n---\nb: 2\n")


@pytest.mark.parametrize(
    "text",
    [
        "a: [" + "1," * 490_000 + "1]\n",
        "".join(f"k{i}: {i}\n" for i in range(70_000)),
        "a: '" + "x" * 990_000 + "'\n",
        "- " * 60 + "x\n" * 1,
    ],
    ids=["many values", "many keys", "long text", "deep but allowed"],
)
def test_any_file_up_to_a_megabyte_is_read_or_refused_in_bounded_memory(
    tmp_path: Path, text: str
) -> None:
    # Tests assert on no clock (a loaded machine makes them flaky); the speed of these files
    # was measured by hand: under 0.3 s each on 2 cores.
    path = tmp_path / "big.yaml"
    path.write_text(text)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with contextlib.suppress(YamlRefused):
        read_yaml_file(path)
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 100_000
