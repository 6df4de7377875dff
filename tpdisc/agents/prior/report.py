"""Tables describing built priors, for ``tpdisc prior build`` and ``tpdisc prior show``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table


def backend_label(backend: dict[str, Any]) -> str:
    name = str(backend.get("backend", "?"))
    if name == "fasttext":
        return f"fasttext:{backend.get('path', '?')}"
    if name == "ngram":
        return f"ngram (dim {backend.get('dim')})"
    return name


def quality_table(rows: Sequence[dict[str, Any]], title: str = "Empowerment priors") -> Table:
    """One row per prior: held-out quality and build cost."""
    table = Table(title=title)
    for col in ("backend", "ROC-AUC", "mean rank", "top-1", "top-10", "build", "file"):
        table.add_column(col, justify="left" if col in ("backend", "file") else "right")
    for row in rows:
        if not row.get("ok", True):
            table.add_row("?", "", "", "", "", "", f"{row['path']}: {row.get('error')}")
            continue
        m, build = row.get("metrics", {}), row.get("build", {})
        table.add_row(
            backend_label(row.get("backend", {})),
            f"{m.get('roc_auc', float('nan')):.3f}",
            f"{m.get('mean_rank', float('nan')):.1f}",
            f"{m.get('top1', float('nan')):.1%}",
            f"{m.get('top10', float('nan')):.1%}",
            f"{build.get('seconds', float('nan')):.0f} s",
            str(row.get("path", "")),
        )
    return table
