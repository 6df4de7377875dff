"""The sections of a study's report, one function per stage's results: its figures and
its numbers as tables beside them. Each reads its stage's ``results/STAGE.json`` as the
stage wrote it (see :mod:`tpdisc.study.stages` and :mod:`tpdisc.study.analyses`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tpdisc.report.markup import (
    DASH,
    Markup,
    beside,
    bullets,
    facts,
    failures,
    figures,
    link,
    matrix,
    mean_sem,
    note,
    num,
    of_values,
    pval,
    starred,
    table,
)
from tpdisc.report.search_run import page_name


@dataclass(frozen=True)
class View:
    """What the sections draw from: each stage's results (None: not done), the figures
    copied beside the report and the runs' archive browsers (label -> folder, relative
    to the report)."""

    results: Mapping[str, dict[str, Any] | None]
    figures: set[str]
    browsers: Mapping[str, str]
    portraits: Mapping[str, str] = field(default_factory=dict)  # run label -> its best's page

    def result(self, stage: str) -> dict[str, Any]:
        data = self.results.get(stage)
        assert data is not None  # a section is drawn only once its stage is done
        return data


def _signed(value: float | None) -> str:
    # Rounded first: a difference of -1e-16 shows as +0.00, not -0.00.
    return DASH if value is None else f"{round(value, 2) or 0.0:+.2f}"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("-inf")


def performance(view: View) -> Markup:
    baselines = view.result("baselines")
    best = view.results.get("best")
    horizon, long = baselines["horizon"], baselines["long_steps"]
    entries = [*(best["protocols"] if best else []), *baselines["protocols"]]
    rows = []
    for e in sorted(entries, key=lambda e: -_mean(e["final_horizon"])):
        # A run's best protocol is named by its run (as in the figures), then its own name.
        name: object = f"{e['name']} ({e['protocol']})" if "protocol" in e else e["name"]
        if e["name"] in view.portraits and "protocol" in e:
            name = link(view.portraits[e["name"]], name)
        rows.append(
            [name, e["kind"], of_values(e["final_horizon"]), of_values(e["final_long"]),
             len(e["seeds"])]
        )  # fmt: skip
    numbers = table(
        ["protocol", "kind", f"final coverage, step {horizon}", f"final coverage, step {long}",
         "n"],
        rows, labels=2,
    )  # fmt: skip
    errors = {
        f"{e['name']} seed {seed}": error
        for e in entries
        for seed, error in e.get("errors", {}).items()
    }
    parts = [
        beside(figures(view.figures, ["coverage.png"]), numbers),
        note(
            f"Mean ± standard error of the final coverage over the simulations (n) at the "
            f"search's horizon ({horizon} steps) and over the long one ({long} steps)."
        ),
        failures(errors, "simulations whose protocol failed"),
    ]
    if best is None:
        parts.append(note("The best protocols: not run yet."))
    else:
        parts += [_pairwise(view, best["pairwise"]), bullets(best.get("notes", []))]
    return Markup("\n".join(parts))


def _pairwise(view: View, comparison: Mapping[str, Any]) -> Markup:
    names = comparison["names"]
    cells = [
        [
            DASH if i == j else Markup(f"{_signed(diff)}<br>{starred(p)}")
            for j, (diff, p) in enumerate(zip(diffs, ps, strict=True))
        ]
        for i, (diffs, ps) in enumerate(
            zip(comparison["difference"], comparison["p_adjusted"], strict=True)
        )
    ]
    explained = note(
        "Row against column at the search's horizon: difference of mean final coverage, "
        "then the one-sided Welch p-value that the row beats the column, "
        "Benjamini–Hochberg adjusted over all ordered pairs (* p<.05, ** p<.01, *** p<.001)."
    )
    return Markup(
        f"<h3>Pairwise comparison</h3>\n"
        f"{beside(figures(view.figures, ['pairwise.png']), matrix(names, cells))}{explained}"
    )


def search(view: View) -> Markup:
    data = view.result("search")
    rows = []
    for run in data["runs"]:
        label = run["label"]
        browser = view.browsers.get(label)
        done = run["iterations"][-1] if run["iterations"] else 0
        top = run["best"]
        if top is None:
            best: object = DASH
        elif browser is None:
            best = f"{num(top['fitness'])} ({top['name']})"
        else:
            page = link(f"{browser}/protocols/{page_name(top['name'], top['id'])}", top["name"])
            best = Markup(f"{num(top['fitness'])} ({page})")
        rows.append(
            [label, run["kind"], f"{done} / {data['iterations']}", run["valid_protocols"], best,
             num(run["best_baseline"]),
             link(f"{browser}/index.html", "protocols") if browser else DASH]
        )  # fmt: skip
    numbers = table(
        ["run", "kind", "iterations", "valid protocols", "best fitness (protocol)",
         "best seed baseline", "archive"],
        rows, labels=2,
    )  # fmt: skip
    return Markup(
        beside(figures(view.figures, ["search.png"]), numbers)
        + note(
            "Fitness: mean final coverage over the search's seeds at its horizon. The archive "
            "browser of a run shows every protocol with its code, lineage and changes."
        )
    )


def _ablation_row(run: str, name: str, s: Mapping[str, Any]) -> list[object]:
    return [
        run,
        name,
        s["n"],
        mean_sem(s["original_mean"], s["original_sem"]),
        mean_sem(s["ablated_mean"], s["ablated_sem"]),
        Markup(f"{_signed(s['delta'])} ± {num(s['delta_sem'])}"),
        starred(s["p"]),
        pval(s.get("p_wilcoxon")),
    ]


def ablation(view: View) -> Markup:
    data = view.result("ablation")
    rows = [_ablation_row("all runs", name, s) for name, s in data["sets"].items()]
    for run, sets in data.get("per_run", {}).items():
        rows += [_ablation_row(run, name, s) for name, s in sets.items()]
    numbers = table(
        ["runs", "set", "n", "original", "ablated", "delta", "p", "p (Wilcoxon)"], rows, labels=2
    )
    notes = [f"{r['run']}: {r['note']}" for r in data.get("runs", []) if r.get("note")]
    return Markup(
        beside(figures(view.figures, ["ablation.png"]), numbers)
        + note(data.get("test", ""))
        + bullets(notes)
        + failures(data.get("failed"))
    )


def features(view: View) -> Markup:
    data = view.result("features")
    rows = [
        [r["name"], r["group"], r["n"], f"{num(r['rho'])} {r['stars']}".strip(), pval(r["p"]),
         pval(r["q"]), num(r["cohens_d"]), num(r["rho_original"]), num(r["rho_ablated"]),
         num(r["reference_rho"])]
        for r in data["features"]
    ]  # fmt: skip
    numbers = table(
        ["feature", "group", "n", "ρ", "p", "q", "d", "ρ original", "ρ ablated", "reference ρ"],
        rows, labels=2,
    )  # fmt: skip
    return Markup(
        note(
            f"{data['n_protocols']} protocols. ρ: Spearman's ρ of (original − ablated) with "
            "fitness; q: Benjamini–Hochberg across features (** q<.01, *** q<.001); d: Cohen's "
            "d between the original and the ablated values; reference ρ: the reference study's."
        )
        + beside(figures(view.figures, ["features.png"]), numbers)
        + failures(data.get("failed"))
    )


def volume(view: View) -> Markup:
    data = view.result("volume")
    numbers = table(
        ["measure", "value"],
        [["protocols", data["n"]], ["Spearman ρ", num(data["rho"])], ["p", starred(data["p"])],
         ["x", data["x"]], ["y", data["y"]]],
        labels=1,
    )  # fmt: skip
    return Markup(
        beside(figures(view.figures, ["volume.png"]), numbers) + failures(data.get("failed"))
    )


def generalization(view: View) -> Markup:
    data = view.result("generalization")
    rows = [
        [s["name"], s["description"], s["best_baseline"],
         mean_sem(s["evolved_mean"], s["evolved_sem"]),
         mean_sem(s["best_baseline_mean"], s["best_baseline_sem"]),
         num(s["improvement"]), f"{pval(s['p'])} {s['stars']}".strip(),
         f"{pval(s.get('p_protocols'))} {s.get('stars_protocols', '')}".strip(),
         num(s["reference_improvement"]), s["reachable"]]
        for s in data["settings"]
    ]  # fmt: skip
    numbers = table(
        ["setting", "description", "best baseline", "evolved coverage", "baseline coverage",
         "gain %", "p (simulations)", "p (protocols)", "reference gain %", "reachable"],
        rows, labels=3,
    )  # fmt: skip
    skipped = [f"{s['name']}: {s['reason']}" for s in data.get("skipped", [])]
    return Markup(
        beside(figures(view.figures, ["generalization.png"]), numbers)
        + note(f"{data.get('sims', DASH)} simulations per protocol; {data.get('test', '')}")
        + (note("Settings skipped:") + bullets(skipped) if skipped else "")
        + failures(data.get("failed"))
    )


def embeddings(view: View) -> Markup:
    data = view.result("embeddings")

    def mmd(names: Sequence[str], values: Sequence[Sequence[float | None]]) -> Markup:
        return matrix(names, [[num(v, 3) for v in row] for row in values])

    tables = [
        facts([("backend", data["backend"]), ("MMD", data.get("mmd_estimator", DASH))]),
        "<h3>MMD between runs</h3>",
        mmd(data["runs"], data["mmd"]),
    ]
    if len(data.get("kinds", [])) > 1:
        tables += ["<h3>MMD between kinds</h3>", mmd(data["kinds"], data["mmd_kinds"])]
    return beside(
        figures(view.figures, ["embedding_map.png", "mmd_runs.png", "mmd_kinds.png"]),
        Markup("\n".join(tables)),
    )
