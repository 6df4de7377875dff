"""The ``evaluate``, ``compare`` and ``variants`` commands."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tpdisc.cli.options import (
    CONFIG_OPTIONS,
    PROTOCOL_GROUPS,
    DropoutSeedOpt,
    MaxDepthOpt,
    Opt,
    RecipesOpt,
    SimsOpt,
)
from tpdisc.cli.output import (
    JsonTarget,
    console,
    err_console,
    human_console,
    json_on_stdout,
    json_option,
    user_errors,
)
from tpdisc.cli.runs import describe_run, run_evaluations, run_references
from tpdisc.cli.settings import Options, print_yaml, with_options
from tpdisc.cli.tables import (
    accounting_table,
    llm_usage,
    mechanism_table,
    results_table,
    versus,
    versus_asocial,
    write_figures,
)
from tpdisc.domain.data import default_graph
from tpdisc.domain.recipes import RecipeGraph
from tpdisc.domain.variants import (
    REFERENCE_DEPTH_REACHABLE,
    REFERENCE_THREE_ITEM_REACHABLE,
    VARIANTS,
    VariantSpec,
    depth_closest_to,
    make_domain,
    short_start_sets,
)
from tpdisc.errors import ConfigError
from tpdisc.protocols.baselines import BASELINES, STANDARD_BASELINES
from tpdisc.protocols.interface import ProtocolSpec
from tpdisc.safefiles import hold_outputs, make_dirs
from tpdisc.sim.config import EvaluationConfig
from tpdisc.sim.provenance import provenance

ProtocolsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Baseline names, protocol .py files, or a search's protocols: RUN_DIR:NAME "
        "(runs/first:i0007), or RUN_DIR for its pick (the best on fresh seeds where it "
        "re-scored any). Default: the five standard baselines "
        f"({', '.join(STANDARD_BASELINES)}), or the protocols of --config.",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    str | None, json_option("the settings and every protocol's results, every simulation")
]
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Save coverage.png (mean ± sem over steps) and pairwise.png (Welch tests) here.",
    ),
]
LogDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--log-dir",
        help="Write each simulation's transmission log (step, teacher, learner, memory, "
        "recipe, survived bottleneck) as PROTOCOL-seedN.parquet here.",
    ),
]
DetailsOpt = Annotated[
    bool,
    typer.Option(
        "--details",
        help="Also print a table, per protocol and agent type, of the mechanism numbers "
        "(means over sims): inventory size and gain, success rate, fractions of attempts "
        "re-making a received recipe or result, Jaccard distance between inventories, size "
        "of their union; and a table of where each protocol's elements come from: each "
        "attempt classed by how it was chosen (re-making a received recipe, alone, with a "
        "borrowed element, steered by the social bias, own pair anyway) with the new "
        "elements each way found and, with asocial play among the protocols, each way's "
        "contribution to the gain over it. The --json results always hold them, under "
        "'mechanism' and 'accounting'.",
    ),
]
AblateOpt = Annotated[
    bool,
    typer.Option(
        "--ablate",
        help="Also run each protocol's state-agnostic ablation: its schedule replayed "
        "with memories chosen at random.",
    ),
]
ReferenceOpt = Annotated[
    str | None,
    typer.Option(
        "--reference",
        help="Protocol the table tests every other one against (its name as the table "
        "prints it: a baseline name or a file's stem). Default: the best standard baseline "
        "evaluated. The table shows the difference of means and the one-sided p that the "
        "protocol beats it, adjusted as in pairwise.json, with stars.",
        show_default=False,
    ),
]
AloneOpt = Annotated[
    bool,
    typer.Option(
        "--alone",
        help="Evaluate only the protocol given. Without it, a single protocol that is not a "
        "baseline is compared with the five standard baselines "
        f"({', '.join(STANDARD_BASELINES)}); several protocols are evaluated as given.",
    ),
]
EVALUATION_OPTIONS: tuple[Opt, ...] = (
    Opt("sims", SimsOpt, "sims"),
    Opt("ablate", AblateOpt, "ablate"),
    Opt("recipes", RecipesOpt, "recipes"),
)
EVALUATE_GROUPS = (CONFIG_OPTIONS, EVALUATION_OPTIONS, *PROTOCOL_GROUPS)


@user_errors
@with_options(*EVALUATE_GROUPS, defaults=EvaluationConfig())
def evaluate_cmd(
    protocols: ProtocolsArg = None,
    json_out: JsonOpt = None,
    plot: PlotOpt = None,
    log_dir: LogDirOpt = None,
    details: DetailsOpt = False,
    reference: ReferenceOpt = None,
    alone: AloneOpt = False,
    *,
    options: Options,
) -> None:
    """Evaluate protocols: final coverage (mean ± sem) over seeded simulations, and each
    protocol's difference from the best standard baseline with its significance (and from
    asocial play). Protocols given without a baseline are compared with the standard
    baselines (--alone: not)."""
    config = evaluation_config(protocols, options, alone)
    target = JsonTarget.parse(json_out)
    added = baselines_added(protocols, alone)
    run(config, options, [target] if target else [], plot, log_dir, details, reference, added)


@user_errors
@with_options(*EVALUATE_GROUPS, defaults=EvaluationConfig())
def compare_cmd(
    protocols: ProtocolsArg = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for results.json and the figures (coverage.png, pairwise.png).",
        ),
    ] = Path("results/compare"),
    json_out: Annotated[
        str | None,
        json_option(
            "the settings and every protocol's results (results.json in --out holds them "
            "too, unless FILE is given)"
        ),
    ] = None,
    log_dir: LogDirOpt = None,
    details: DetailsOpt = False,
    reference: ReferenceOpt = None,
    alone: AloneOpt = False,
    *,
    options: Options,
) -> None:
    """Evaluate protocols and save the comparison figures: coverage curves and the pairwise
    matrix with significance stars (the README's main job); the table shows each
    protocol's difference from the best standard baseline with its significance (and from
    asocial play). Protocols given without a baseline are compared with the standard
    baselines (--alone: not)."""
    config = evaluation_config(protocols, options, alone)
    target = JsonTarget.parse(json_out)
    targets = [target] if target is not None else []
    if target is None or target.on_stdout:  # the folder keeps it beside its figures
        targets.append(JsonTarget(out / "results.json"))
    added = baselines_added(protocols, alone)
    run(config, options, targets, out, log_dir, details, reference, added, keep_earlier=True)


COMPARE_OUTPUTS = ("results.json", "coverage.png", "pairwise.png", "pairwise.json")


def check_reference(
    config: EvaluationConfig, reference: str | None, resolved: Mapping[str, ProtocolSpec]
) -> None:
    """Refuse a --reference that names none of the protocols before simulating anything."""
    if reference is None:
        return
    names = {*config.protocols, *(Path(p).stem for p in config.protocols)}
    names |= {spec.name for spec in resolved.values()}
    if reference not in names:
        raise ConfigError(
            f"--reference {reference!r} is not among the protocols to evaluate "
            f"({', '.join(config.protocols)})"
        )


def keep_earlier_results(out: Path) -> None:
    """Move an earlier comparison's files from ``out`` to ``out/previous`` (replacing the
    one kept before), saying so: a rerun never silently loses a result."""
    earlier = [out / name for name in COMPARE_OUTPUTS if (out / name).is_file()]
    if not earlier:
        return
    kept = make_dirs(out / "previous", out)  # a link there would move the files out
    when = datetime.fromtimestamp(earlier[0].stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    for path in earlier:
        path.replace(kept / path.name)
    message = f"the earlier results in {out} (of {when}) are now in {kept}"
    err_console.print(message, soft_wrap=True, highlight=False)  # paths never broken


def evaluation_config(
    protocols: list[str] | None, options: Options, alone: bool = False
) -> EvaluationConfig:
    """The config of the options, with the protocols named as arguments (if any): a single
    protocol that is not a baseline beside the standard baselines, unless ``alone`` (a
    table of one protocol has nothing to compare it with; several protocols are a
    comparison already, say the reference's files with its own baseline files)."""
    if protocols and baselines_added(protocols, alone):
        protocols = [*protocols, *(b for b in STANDARD_BASELINES if b not in protocols)]
    return options.config(EvaluationConfig, {"protocols": protocols} if protocols else {})


def baselines_added(protocols: list[str] | None, alone: bool) -> bool:
    """Whether :func:`evaluation_config` added the standard baselines to ``protocols``."""
    if not protocols or alone or len(protocols) > 1:
        return False
    return protocols[0] not in BASELINES


def run(
    config: EvaluationConfig,
    options: Options,
    json_targets: list[JsonTarget],
    plot: Path | None,
    log_dir: Path | None,
    details: bool,
    reference: str | None = None,
    added: bool = False,
    *,
    keep_earlier: bool = False,
) -> None:
    """Evaluate ``config`` and say, write and draw the results; ``added``: the standard
    baselines were added to the protocols given (said after the table); ``keep_earlier``:
    move the results of an earlier comparison in ``plot`` to ``plot/previous`` first."""
    if options["print_config"]:
        print_yaml(config)
        return
    resolved = run_references(config.protocols, config.trusted)
    check_reference(config, reference, resolved)
    with hold_outputs(plot, log_dir):
        if keep_earlier and plot is not None:
            keep_earlier_results(plot)
        evaluate_and_report(
            config, json_targets, plot, log_dir, details, reference, resolved, added
        )


def evaluate_and_report(
    config: EvaluationConfig,
    json_targets: list[JsonTarget],
    plot: Path | None,
    log_dir: Path | None,
    details: bool,
    reference: str | None,
    resolved: Mapping[str, ProtocolSpec],
    added: bool,
) -> None:
    started = datetime.now(UTC)
    sharing = [p for p in config.protocols if p != "asocial"]
    if config.sim.n_agents == 1 and sharing:
        err_console.print(
            f"warning: with 1 agent no one shares: {', '.join(sharing)} will play as asocial"
        )
    sim = config.sim
    out = human_console(*json_targets)
    with config.executor.open() as pool:
        graph = default_graph(config.recipes)
        domain = make_domain(graph, sim.variant)
        evaluations = run_evaluations(config, domain, pool, log_dir, resolved)
    title = (
        f"{sim.n_agents} agents ({', '.join(f'{k}×{n}' for k, n in sim.agents)}), "
        f"{sim.n_steps} steps, {config.sims} sims, variant {domain.name}"
    )
    if any(kind == "empowerment" for kind, _ in sim.agents):
        model = sim.params.empowerment
        title += f"; empowerment model {model.label}, prior seed {model.prior.seed}"
    if added:  # after the results: never a line before an error
        err_console.print(
            f"compared with the standard baselines too ({', '.join(STANDARD_BASELINES)}); "
            "--alone for only the protocols given",
            highlight=False,
            soft_wrap=True,
        )
    against = versus(evaluations, reference)
    asocial = versus_asocial(evaluations, against)
    if not json_on_stdout(*json_targets):
        out.print(results_table(evaluations, title, against, asocial))
    if details and not json_on_stdout(*json_targets):
        out.print(mechanism_table(evaluations, "Mechanism per agent type (means over sims)"))
        out.print(accounting_table(evaluations, sim.n_agents))
    for line in llm_usage(evaluations):
        out.print(line, highlight=False)
    if json_targets:
        payload = {
            "run": provenance(started),
            "config": describe_run(sim, domain, graph, config.seeds),
            "evaluation": config.to_dict(),
            "results": [ev.to_json() for ev in evaluations],
        }
        if against is not None:
            payload["versus_reference"] = against.to_json()
        if asocial is not None:
            payload["versus_asocial"] = asocial.to_json()
        for target in json_targets:
            target.write(payload, say=out)
    if plot:
        for path in write_figures(evaluations, plot, title):
            out.print(f"figure saved to {path}")


@user_errors
def variants_cmd(
    recipes: RecipesOpt = None,
    max_depth: MaxDepthOpt = 3,
    dropout_seed: DropoutSeedOpt = 0,
    json_out: Annotated[
        str | None, json_option("each variant's start sets and reachable counts")
    ] = None,
) -> None:
    """Reachable-element count of every domain variant."""
    target = JsonTarget.parse(json_out)
    graph = default_graph(recipes)
    rows: list[dict[str, Any]] = []
    for name in VARIANTS:
        domain = make_domain(
            graph, VariantSpec(name, max_depth=max_depth, dropout_seed=dropout_seed)
        )
        per_start = domain.reachable_per_start()
        rows.append(
            {
                "variant": name,
                "reachable": len(domain.reachable),
                "start_sets": [[graph.names[e] for e in s] for s in domain.start_sets],
                "reachable_per_start_set": per_start,
                "recipes": len(domain.graph.recipes),
            }
        )
    notes = variant_notes(graph, rows, max_depth)
    if target is not None:
        target.write({"variants": rows, "notes": notes})
        if target.on_stdout:
            return
    table = Table(title=f"Domain variants ({graph.n_elements} elements in the file)")
    for col in ("variant", "reachable (all starts pooled)", "reachable per start set", "recipes"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for row in rows:
        per = row["reachable_per_start_set"]
        table.add_row(
            row["variant"],
            str(row["reachable"]),
            str(per[0]) if len(per) == 1 else f"{min(per)}–{max(per)} over {len(per)} sets",
            str(row["recipes"]),
        )
    console.print(table)
    for note in notes:
        console.print(f"note: {note}", highlight=False)


def variant_notes(graph: RecipeGraph, rows: list[dict[str, Any]], max_depth: int) -> list[str]:
    """Where a variant of the open graph departs from the reference's game version."""
    notes = []
    depth, count = depth_closest_to(graph)
    depth_row = next(r for r in rows if r["variant"] == "depth-limited")
    notes.append(
        f"depth-limited: depth {max_depth} reaches {depth_row['reachable']} elements here, the "
        f"reference's depth-3 game {REFERENCE_DEPTH_REACHABLE}; depth {depth} "
        f"(--max-depth {depth}) reaches {count}, the closest"
    )
    lo, hi = REFERENCE_THREE_ITEM_REACHABLE
    short = short_start_sets(make_domain(graph, VariantSpec("3-item")), graph)
    if short:
        sets = "; ".join(f"{' + '.join(names)} reaches {n}" for names, n in short)
        notes.append(
            f"3-item: {sets}, far below the reference's {lo}–{hi} per start set: agents "
            "starting there depend on what others send them"
        )
    return notes
