"""Reading fastText word vectors: the text ``.vec`` format and the binary ``.bin`` model.

The binary reader follows fastText's own format (version 12, as written by
``FastText::saveModel``) and reproduces ``FastText::getWordVector``: the average of the
input-matrix rows of the word (when in the vocabulary) and of its character n-grams,
hashed with 32-bit FNV-1a into ``bucket`` rows. That is what ``model[name]`` returned in
Brändle et al.'s code, including for names with a space ("steam engine"), which fastText
treats as one out-of-vocabulary token made of its n-grams. Quantised models (``.ftz``) are
not supported.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tpdisc.errors import ConfigError

MAGIC = 793712314
VERSION = 12
BOW, EOW = "<", ">"


def fnv1a(data: bytes) -> int:
    """fastText's string hash: FNV-1a over bytes taken as *signed* chars."""
    h = 2166136261
    for byte in data:
        signed = byte - 256 if byte >= 128 else byte
        h = (h ^ (signed & 0xFFFFFFFF)) & 0xFFFFFFFF
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def char_ngrams(word: str, minn: int, maxn: int) -> list[bytes]:
    """Character n-grams of ``<word>`` as fastText computes them (UTF-8 aware, n counts
    characters; single characters at either boundary are skipped)."""
    data = (BOW + word + EOW).encode("utf-8")
    grams: list[bytes] = []
    size = len(data)
    for i in range(size):
        if (data[i] & 0xC0) == 0x80:
            continue
        j, n = i, 1
        gram = bytearray()
        while j < size and n <= maxn:
            gram.append(data[j])
            j += 1
            while j < size and (data[j] & 0xC0) == 0x80:
                gram.append(data[j])
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == size)):
                grams.append(bytes(gram))
            n += 1
    return grams


@dataclass
class FastTextModel:
    """The parts of a fastText binary model needed to compute word vectors."""

    dim: int
    minn: int
    maxn: int
    bucket: int
    words: dict[str, int]
    input: np.ndarray
    pruneidx: dict[int, int] | None  # None: n-grams not pruned

    def subword_rows(self, word: str) -> list[int]:
        rows = [self.words[word]] if word in self.words else []
        if self.maxn <= 0 or self.pruneidx == {}:
            return rows
        nwords = len(self.words)
        for gram in char_ngrams(word, self.minn, self.maxn):
            h = fnv1a(gram) % self.bucket
            if self.pruneidx is not None:
                if h not in self.pruneidx:
                    continue
                h = self.pruneidx[h]
            rows.append(nwords + h)
        return rows

    def word_vector(self, word: str) -> np.ndarray:
        rows = self.subword_rows(word)
        if not rows:
            return np.zeros(self.dim, dtype=np.float32)
        vector: np.ndarray = self.input[rows].mean(axis=0, dtype=np.float64).astype(np.float32)
        return vector


def _read(fh: BinaryIO, fmt: str, path: Path) -> tuple[int | float, ...]:
    size = struct.calcsize(fmt)
    raw = fh.read(size)
    if len(raw) != size:
        raise ConfigError(f"{path}: truncated fastText model")
    return struct.unpack(fmt, raw)


def _read_cstring(fh: BinaryIO, path: Path) -> str:
    out = bytearray()
    while True:
        c = fh.read(1)
        if not c:
            raise ConfigError(f"{path}: truncated fastText dictionary")
        if c == b"\0":
            return out.decode("utf-8", errors="replace")
        out += c


def load_bin(path: str | Path) -> FastTextModel:
    """Load a fastText ``.bin`` model (word vectors and n-gram buckets)."""
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read fastText model ({err.strerror or err})") from None
    with fh:
        magic, version = _read(fh, "<ii", path)
        if magic != MAGIC:
            raise ConfigError(f"{path}: not a fastText binary model (bad magic number)")
        if version > VERSION:
            raise ConfigError(f"{path}: fastText model version {version} is not supported")
        dim, _ws, _epoch, _min_count, _neg, _word_ngrams, _loss, _model, bucket, minn, maxn = (
            int(v) for v in _read(fh, "<11i", path)
        )
        _read(fh, "<id", path)  # lrUpdateRate, t
        size, nwords, _nlabels = (int(v) for v in _read(fh, "<3i", path))
        _ntokens, pruneidx_size = (int(v) for v in _read(fh, "<2q", path))
        words: dict[str, int] = {}
        for i in range(size):
            word = _read_cstring(fh, path)
            _count, kind = _read(fh, "<qb", path)
            if i < nwords and kind == 0:
                words[word] = i
        pruneidx: dict[int, int] | None = None
        if pruneidx_size >= 0:
            pruneidx = {}
            for _ in range(pruneidx_size):
                first, second = (int(v) for v in _read(fh, "<ii", path))
                pruneidx[first] = second
        (quant,) = _read(fh, "<?", path)
        if quant:
            raise ConfigError(f"{path}: quantised fastText models (.ftz) are not supported")
        rows, cols = (int(v) for v in _read(fh, "<2q", path))
        if cols != dim:
            raise ConfigError(f"{path}: input matrix has {cols} columns, model dim is {dim}")
        matrix = np.fromfile(fh, dtype="<f4", count=rows * cols)
        if matrix.size != rows * cols:
            raise ConfigError(f"{path}: truncated fastText input matrix")
    return FastTextModel(dim, minn, maxn, bucket, words, matrix.reshape(rows, cols), pruneidx)


def load_vec(path: str | Path, wanted: set[str] | None = None) -> dict[str, np.ndarray]:
    """Read a ``.vec`` text file (``count dim`` header, then ``word v1 … vdim`` lines).

    With ``wanted``, only those words are kept (crawl-300d-2M holds two million lines).
    """
    path = Path(path)
    vectors: dict[str, np.ndarray] = {}
    try:
        fh = path.open("r", encoding="utf-8", errors="replace")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read word vectors ({err.strerror or err})") from None
    with fh:
        header = fh.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise ConfigError(f"{path}: first line must be '<count> <dim>', got {header!r}")
        dim = int(header[1])
        for lineno, line in enumerate(fh, start=2):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            word = parts[0]
            if wanted is not None and word not in wanted:
                continue
            if len(parts) != dim + 1:
                raise ConfigError(
                    f"{path}: line {lineno}: expected {dim} values after the word, "
                    f"got {len(parts) - 1}"
                )
            try:
                vectors[word] = np.asarray(parts[1:], dtype=np.float32)
            except ValueError:
                raise ConfigError(f"{path}: line {lineno}: non-numeric value") from None
    return vectors


def name_vectors(path: str | Path, names: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """One vector per element name from a ``.bin`` or ``.vec`` file.

    ``.bin``: fastText's word vector of the whole name (n-grams cover any name). ``.vec``:
    the name's own vector if listed (spaces as ``_`` too), else the mean of its words'
    vectors. Returns the vectors and the names no word of which was found (zero vectors).
    """
    path = Path(path)
    if path.suffix == ".bin":
        model = load_bin(path)
        return np.stack([model.word_vector(n) for n in names]), []
    words = {w for n in names for w in (n, n.replace(" ", "_"), *n.split())}
    table = load_vec(path, words | {w.lower() for w in words})
    if not table:
        raise ConfigError(f"{path}: no element name or word of one found in the file")
    dim = len(next(iter(table.values())))
    out = np.zeros((len(names), dim), dtype=np.float32)
    missing: list[str] = []
    for i, name in enumerate(names):
        for key in (name, name.replace(" ", "_"), name.lower()):
            if key in table:
                out[i] = table[key]
                break
        else:
            found = [table.get(w, table.get(w.lower())) for w in name.split()]
            hits = [v for v in found if v is not None]
            if hits:
                out[i] = np.mean(hits, axis=0)
            else:
                missing.append(name)
    return out, missing
