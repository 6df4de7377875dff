"""``tpdisc inspect``: pages and JSON, whose numbers agree with ``evaluate --details`` and
the behavioural features of ``analyze features`` on the same seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.analysis.test_portrait import ZERO_TO_ONE
from tests.conftest import TOY
from tpdisc.analysis.features import feature_values
from tpdisc.cli import app
from tpdisc.domain.recipes import parse_wordcraft
from tpdisc.domain.variants import VariantSpec, make_domain
from tpdisc.protocols.baselines import BaselineProtocol
from tpdisc.sim.config import SimConfig
from tpdisc.sim.evaluate import evaluate

runner = CliRunner()
FAST = ["--agents", "4", "--steps", "9", "--sims", "3", "--agent-type", "stochastic"]
SERIAL = ["--executor", "serial"]


@pytest.fixture
def recipes(tmp_path: Path) -> Path:
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return path


def test_inspect_writes_pages_and_json_that_agree_with_evaluate_details(
    recipes: Path, tmp_path: Path
) -> None:
    protocol = tmp_path / "zero_to_one.py"
    protocol.write_text(ZERO_TO_ONE)
    out, numbers = tmp_path / "insp", tmp_path / "insp.json"
    args = [str(protocol), "stochastic", *FAST, *SERIAL, "--recipes", str(recipes), "--trusted"]
    result = runner.invoke(app, ["inspect", *args, "--out", str(out), "--json", str(numbers)])
    assert result.exit_code == 0, result.output
    for page in ("index.html", "zero_to_one/index.html", "stochastic/index.html"):
        assert (out / page).is_file()
    payload = json.loads(numbers.read_text())
    zero, stochastic = payload["portraits"]
    assert zero["seeds"] == [0, 1, 2] and payload["evaluation"]["sims"] == 3
    flow = zero["flow"]
    delivered = [
        [s + f for s, f in zip(successes, failures, strict=True)]
        for successes, failures in zip(flow["successes"], flow["failures"], strict=True)
    ]
    assert delivered == [[0, 9, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    details = tmp_path / "details.json"
    result = runner.invoke(
        app, ["evaluate", *args, "--ablate", "--details", "--json", str(details)]
    )
    assert result.exit_code == 0, result.output
    evaluated = {r["protocol"]: r for r in json.loads(details.read_text())["results"]}
    for portrait in (zero, stochastic):
        name = portrait["name"]
        mechanism = evaluated[name]["mechanism"]["stochastic"]
        assert portrait["mechanism"]["stochastic"] == pytest.approx(mechanism)
        agents = portrait["agents"]["protocol"]
        assert agents["jaccard"][-1] == pytest.approx(mechanism["jaccard_distance"])
        assert agents["remake_fraction"] == pytest.approx(mechanism["remake_fraction"])
        assert agents["mean_inventory"][-1] == pytest.approx(mechanism["inventory_size"])
        assert portrait["coverage"]["protocol"]["final"] == evaluated[name]["final"]
        ablated = evaluated[f"{name} (ablated)"]
        assert portrait["coverage"]["ablation"]["final"] == ablated["final"]
        assert portrait["coverage"]["protocol"]["mean"] == pytest.approx(
            evaluated[name]["curve_mean"]
        )
    # the behavioural features of the same simulations (analyze features' computation)
    domain = make_domain(parse_wordcraft(TOY, "toy"), VariantSpec())
    config = SimConfig(n_agents=4, n_steps=9, agent_type="stochastic")
    logged = []
    evaluate(domain, config, BaselineProtocol("stochastic"), [0, 1, 2],
             on_result=logged.append, record_log=True)  # fmt: skip
    features = feature_values(logged)
    whole = stochastic["content"]["whole_game"]
    assert whole["lacks_result"] == pytest.approx(features["item_novelty"])
    assert whole["rarity"] == pytest.approx(features["rarity_bias"])
    assert whole["has_2"] == pytest.approx(features["has_2_fraction"])


def test_inspect_defaults_to_five_sims_and_explains_every_option(recipes: Path) -> None:
    result = runner.invoke(app, ["inspect", "asocial", "--recipes", str(recipes), "--print-config"])
    assert result.exit_code == 0, result.output
    assert "sims: 5" in result.stdout
    result = runner.invoke(app, ["inspect", "--help"], env={"COLUMNS": "200"})
    for option in ("--sims", "--out", "--json", "--agent-type", "--population", "--beta",
                   "--variant", "--executor", "--trusted", "--time-limit"):  # fmt: skip
        assert option in result.stdout


def test_inspect_names_an_unknown_protocol_in_one_line(recipes: Path) -> None:
    result = runner.invoke(app, ["inspect", "nonesuch", "--recipes", str(recipes), *SERIAL])
    assert result.exit_code == 1
    assert "unknown protocol 'nonesuch'" in result.stderr
