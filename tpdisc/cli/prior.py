"""The ``prior`` sub-commands: build and list the empowerment agents' priors."""

from __future__ import annotations

from typing import Annotated

import typer

from tpdisc.cli.options import RecipesOpt
from tpdisc.cli.output import JsonTarget, console, json_on_stdout, json_option, user_errors
from tpdisc.domain.data import default_graph
from tpdisc.errors import ConfigError

prior_app = typer.Typer(
    help="The empowerment agents' prior: cross-validated P(success) and P(result) per pair.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@prior_app.command("build")
@user_errors
def prior_build_cmd(
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Element vectors: 'ngram' (character n-grams, no download), "
            "'fasttext:PATH' (.vec or .bin), 'minilm' (needs the extra tpdisc[sentence]).",
        ),
    ] = "ngram",
    prior_seed: Annotated[
        int,
        typer.Option(
            "--prior-seed",
            min=0,
            help="Seed of the cross-validation folds and the models' initialisation: each "
            "seed gives a different, equally good prior (simulations pick one with the same "
            "option). The same data, backend, settings and seed give the same bytes.",
        ),
    ] = 0,
    old_seed: Annotated[
        int | None, typer.Option("--seed", min=0, hidden=True, show_default=False)
    ] = None,  # the option's earlier name, still read
    recipes: RecipesOpt = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Build again even if a sound cached prior exists.")
    ] = False,
) -> None:
    """Build the prior of the recipe graph (or find it in the cache) and show its quality."""
    from tpdisc.agents.empowerment.prior.build import PriorSettings
    from tpdisc.agents.empowerment.prior.report import quality_table
    from tpdisc.agents.empowerment.prior.store import ensure_prior, fingerprint

    if old_seed is not None:
        if prior_seed != 0 and prior_seed != old_seed:
            raise ConfigError("--seed is the old name of --prior-seed: give one of them")
        prior_seed = old_seed
    settings = PriorSettings(seed=prior_seed)
    prior, path = ensure_prior(default_graph(recipes), backend, settings, rebuild=rebuild)
    row = {**prior.meta, "path": str(path), "fingerprint": fingerprint(prior.meta)}
    console.print(quality_table([row], "Prior (held-out quality)"))


@prior_app.command("show")
@user_errors
def prior_show_cmd(
    json_out: Annotated[
        str | None, json_option("every cached prior: its quality, build and fingerprint")
    ] = None,
) -> None:
    """List the priors in the cache with their held-out quality and build time."""
    from tpdisc.agents.empowerment.prior.report import quality_table
    from tpdisc.agents.empowerment.prior.store import cached_priors, prior_dir

    target = JsonTarget.parse(json_out)
    rows = cached_priors()
    if target is not None:
        target.write(rows)
    if json_on_stdout(target):
        return
    if rows:
        console.print(quality_table(rows))
    else:
        console.print(f"no prior in {prior_dir()}; build one with: tpdisc prior build")
