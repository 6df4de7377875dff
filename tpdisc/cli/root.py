"""Every command of ``tpdisc``, assembled (the entry point is :func:`tpdisc.cli.main`)."""

from __future__ import annotations

import typer

from tpdisc.cli.analyze import analyze_app
from tpdisc.cli.analyze_models import register as register_analysis_models
from tpdisc.cli.data import data_app
from tpdisc.cli.evaluate import compare_cmd, evaluate_cmd, variants_cmd
from tpdisc.cli.inspect import inspect_cmd
from tpdisc.cli.output import JsonRuleGroup
from tpdisc.cli.prior import prior_app
from tpdisc.cli.report import report_cmd
from tpdisc.cli.search import archive_cmd, evolve_cmd
from tpdisc.cli.study import study_cmd

__all__ = ["app"]

app = typer.Typer(
    cls=JsonRuleGroup,  # every --json may come without a FILE
    help="Discover transmission protocols for groups that innovate together "
    "(Collective Little Alchemy).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Help texts are plain text: rich markup would swallow "tpdisc[ray]" and "[default]".
    rich_markup_mode=None,
)
app.command("evaluate")(evaluate_cmd)
app.command("compare")(compare_cmd)
app.command("variants")(variants_cmd)
app.command("inspect")(inspect_cmd)
app.command("evolve")(evolve_cmd)
app.command("archive")(archive_cmd)
app.command("report")(report_cmd)
app.command("study")(study_cmd)
app.add_typer(prior_app, name="prior")
app.add_typer(data_app, name="data")
register_analysis_models(analyze_app)
app.add_typer(analyze_app, name="analyze")
