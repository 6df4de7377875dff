from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from tpdisc.agents.empowerment.prior.fasttext import (
    MAGIC,
    char_ngrams,
    fnv1a,
    load_bin,
    load_vec,
    name_vectors,
)
from tpdisc.errors import ConfigError


def test_fnv1a_matches_reference_values() -> None:
    # Published FNV-1a 32-bit test vectors (ASCII: signed and unsigned bytes agree).
    assert fnv1a(b"") == 0x811C9DC5
    assert fnv1a(b"a") == 0xE40C292C
    assert fnv1a(b"foobar") == 0xBF9CF968
    # fastText sign-extends bytes >= 128 before xoring: differs from plain FNV-1a.
    plain = 2166136261
    plain = ((plain ^ 0xE9) * 16777619) & 0xFFFFFFFF
    assert fnv1a(b"\xe9") != plain


def test_char_ngrams_follow_fasttext() -> None:
    assert char_ngrams("ab", 3, 3) == [b"<ab", b"ab>"]
    # single characters at the boundaries ("<", ">") are never n-grams
    assert char_ngrams("ab", 1, 2) == [b"<a", b"a", b"ab", b"b", b"b>"]
    # n counts characters, not bytes
    assert char_ngrams("é", 1, 1) == ["é".encode()]


def write_vec(path: Path, rows: dict[str, list[float]]) -> None:
    dim = len(next(iter(rows.values())))
    lines = [f"{len(rows)} {dim}"] + [
        " ".join([w, *(f"{v:.6f}" for v in vec)]) for w, vec in rows.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_vec_file_names_and_phrases(tmp_path: Path) -> None:
    path = tmp_path / "tiny.vec"
    write_vec(
        path,
        {
            "water": [1.0, 0.0, 0.0],
            "steam": [0.0, 2.0, 0.0],
            "engine": [0.0, 0.0, 4.0],
            "hot_dog": [5.0, 5.0, 5.0],
        },
    )
    vectors, missing = name_vectors(path, ["water", "steam engine", "hot dog", "zzz"])
    assert np.allclose(vectors[0], [1, 0, 0])
    assert np.allclose(vectors[1], [0, 1, 2])  # mean of its words
    assert np.allclose(vectors[2], [5, 5, 5])  # phrase listed with an underscore
    assert np.allclose(vectors[3], 0) and missing == ["zzz"]
    assert set(load_vec(path, {"water"})) == {"water"}


def test_vec_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.vec"
    bad.write_text("not a header\n")
    with pytest.raises(ConfigError, match="first line"):
        load_vec(bad)
    short = tmp_path / "short.vec"
    short.write_text("1 3\nwater 1 2\n")
    with pytest.raises(ConfigError, match="line 2"):
        load_vec(short)


def write_bin(
    path: Path,
    words: list[str],
    matrix: np.ndarray,
    *,
    minn: int,
    maxn: int,
    bucket: int,
    magic: int = MAGIC,
    truncate: int = 0,
) -> None:
    """A fastText version-12 model file as FastText::saveModel writes it."""
    dim = matrix.shape[1]
    out = bytearray()
    out += struct.pack("<ii", magic, 12)
    # dim ws epoch minCount neg wordNgrams loss model bucket minn maxn lrUpdateRate t
    out += struct.pack("<12i", dim, 5, 5, 1, 5, 1, 2, 1, bucket, minn, maxn, 100)
    out += struct.pack("<d", 1e-4)
    out += struct.pack("<3i", len(words), len(words), 0)
    out += struct.pack("<2q", 1000, -1)
    for w in words:
        out += w.encode() + b"\0" + struct.pack("<qb", 10, 0)
    out += struct.pack("<?", False)
    out += struct.pack("<2q", *matrix.shape) + matrix.astype("<f4").tobytes()
    out += struct.pack("<?", False)
    out += struct.pack("<2q", 1, dim) + np.zeros(dim, dtype="<f4").tobytes()
    path.write_bytes(bytes(out[: len(out) - truncate] if truncate else out))


def test_bin_model_word_vectors(tmp_path: Path) -> None:
    bucket, dim = 13, 4
    words = ["fire", "water"]
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((len(words) + bucket, dim)).astype(np.float32)
    path = tmp_path / "tiny.bin"
    write_bin(path, words, matrix, minn=3, maxn=4, bucket=bucket)
    model = load_bin(path)
    assert (model.dim, model.minn, model.maxn, model.bucket) == (dim, 3, 4, bucket)

    def ngram_rows(word: str) -> list[int]:
        return [len(words) + fnv1a(g) % bucket for g in char_ngrams(word, 3, 4)]

    # In the vocabulary: the word's own row and its n-grams, averaged.
    expected = matrix[[0, *ngram_rows("fire")]].mean(axis=0)
    assert np.allclose(model.word_vector("fire"), expected, atol=1e-6)
    # Out of the vocabulary (a name with a space, as Brändle et al. looked up): n-grams only.
    expected = matrix[ngram_rows("fire water")].mean(axis=0)
    assert np.allclose(model.word_vector("fire water"), expected, atol=1e-6)
    vectors, missing = name_vectors(path, ["water", "fire water"])
    assert vectors.shape == (2, dim) and missing == []


def test_bin_model_errors(tmp_path: Path) -> None:
    matrix = np.ones((3, 2), dtype=np.float32)
    bad = tmp_path / "bad.bin"
    write_bin(bad, ["a"], matrix, minn=3, maxn=3, bucket=2, magic=1234)
    with pytest.raises(ConfigError, match="not a fastText binary"):
        load_bin(bad)
    cut = tmp_path / "cut.bin"
    write_bin(cut, ["a"], matrix, minn=3, maxn=3, bucket=2, truncate=30)
    with pytest.raises(ConfigError, match="truncated"):
        load_bin(cut)
    with pytest.raises(ConfigError, match="cannot read"):
        load_bin(tmp_path / "missing.bin")
