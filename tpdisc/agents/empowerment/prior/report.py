"""Tables describing built priors, for ``tpdisc prior build`` and ``tpdisc prior show``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table


def backend_label(backend: dict[str, Any]) -> str:
    name = str(backend.get("backend", "?"))
    if name == "fasttext":
        return f"fasttext:{backend.get('path', '?')}"
    if name == "ngram":
        return f"ngram/{backend.get('dim')}"
    return name


def quality_table(rows: Sequence[dict[str, Any]], title: str = "Empowerment priors") -> Table:
    """One row per prior: held-out quality, build cost and the start of its sha256 (the
    files, ``prior-<key>.npz``, and whole fingerprints are in ``prior show --json``)."""
    folders = {str(Path(str(row["path"])).parent) for row in rows if row.get("path")}
    caption = f"in {', '.join(sorted(folders))}; " if folders else ""
    table = Table(title=title, caption=f"{caption}full fingerprints: tpdisc prior show --json")
    for col in ("backend", "seed", "ROC-AUC", "mean rank", "top-1", "top-10", "build"):
        table.add_column(col, justify="left" if col == "backend" else "right")
    table.add_column("sha256", no_wrap=True, min_width=12)
    for row in rows:
        if not row.get("ok", True):
            table.add_row(f"{row['path']}: {row.get('error')}", *[""] * 7)
            continue
        m, build = row.get("metrics", {}), row.get("build", {})
        table.add_row(
            backend_label(row.get("backend", {})),
            str(row.get("settings", {}).get("seed", "?")),
            f"{m.get('roc_auc', float('nan')):.3f}",
            f"{m.get('mean_rank', float('nan')):.1f}",
            f"{m.get('top1', float('nan')):.1%}",
            f"{m.get('top10', float('nan')):.1%}",
            f"{build.get('seconds', float('nan')):.0f} s",
            str(row.get("fingerprint", {}).get("sha256", ""))[:12],
        )
    return table
