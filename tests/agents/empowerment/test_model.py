"""The empowerment model's parameter section: named models, overrides, old files."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tpdisc.agents.base import AgentParams
from tpdisc.agents.empowerment.model import (
    DEFAULT_MODEL,
    MODELS,
    EmpowermentModel,
    PriorChoice,
    named_model,
    overridden,
)
from tpdisc.config_tree import decode, encode
from tpdisc.errors import ConfigError
from tpdisc.sim.config import SimConfig


def test_named_models_differ_where_they_say() -> None:
    assert named_model(DEFAULT_MODEL) == EmpowermentModel()
    literal = named_model("paper-literal")
    assert (literal.beta, literal.owned, literal.zscore) == (0.05, "zero", True)
    assert literal.label == "paper-literal (β 0.05)"
    for name in MODELS:
        assert named_model(name).name == name
    # the default reads received successes and the social bias as the text does; every
    # older model keeps the choices it was measured with, so its results reproduce
    assert DEFAULT_MODEL == "calibrated-text"
    default = named_model(DEFAULT_MODEL)
    assert (default.received, default.bias, default.failures) == ("item", "unowned", "step")
    assert named_model("calibrated-step") == replace(
        default, name="calibrated-step", received="zero", bias="any"
    )
    assert named_model("calibrated") == replace(
        default, name="calibrated", received="zero", bias="any", failures="always"
    )
    for name in ("calibrated-step", "calibrated", "paper-literal", "previous"):
        assert named_model(name).bias == "any"
    assert (named_model("previous").received, named_model("paper-literal").received) == (
        "item",
        "item",
    )


def test_a_section_is_its_named_model_then_choices_then_fields() -> None:
    model = EmpowermentModel.from_dict({"name": "paper-literal"})
    assert model == named_model("paper-literal")
    model = EmpowermentModel.from_dict(
        {"name": "paper-literal", "choices": "beta=0.2,owns=usable", "beta": 0.3}
    )
    assert (model.name, model.beta, model.owns, model.owned) == (
        "paper-literal",
        0.3,
        "usable",
        "zero",
    )
    # what --print-config writes reads back to the same model
    assert EmpowermentModel.from_dict(encode(model)) == model


def test_an_override_over_a_spelled_out_section_means_what_its_user_says() -> None:
    stored = {**encode(named_model("calibrated-step")), "prior": {"backend": "ngram", "seed": 2}}
    chosen = EmpowermentModel.from_dict(overridden(stored, {"choices": "remember=step"}))
    assert (chosen.name, chosen.remember, chosen.failures) == ("calibrated-step", "step", "step")
    # its own fields win over its own choices, as in a section
    both = overridden(stored, {"choices": "beta=0.2,owns=usable", "beta": 0.3})
    assert (both["beta"], both["owns"]) == (0.3, "usable")
    renamed = EmpowermentModel.from_dict(overridden(stored, {"name": "calibrated"}))
    assert renamed == replace(named_model("calibrated"), prior=PriorChoice("ngram", 2))
    with pytest.raises(ConfigError, match="expected name=value"):
        overridden(stored, {"choices": "colour=red"})


def test_changes_name_what_differs_from_the_named_model() -> None:
    model = replace(named_model("paper-literal"), beta=0.1, remember="step")
    assert model.changes() == "beta=0.1,remember=step"
    assert named_model("paper-literal").with_choices(model.changes()) == model


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "wild"}, "unknown empowerment model 'wild'"),
        ({"beta": 0.0}, "beta=0.0"),
        # Refused as a number first: every config tree holds finite numbers only.
        ({"beta": float("nan")}, "beta: expected a finite number, got nan"),
        ({"noise": "loud"}, "noise='loud'"),
        ({"success": "odds"}, "success='odds'"),
        ({"choices": "colour=red"}, "expected name=value"),
        ({"choices": "noise_sd=much"}, "expected a number"),
        ({"prior": {"seed": -1}}, "prior seed"),
        ({"volume": 3}, "unknown setting volume"),
    ],
)
def test_mistakes_are_one_line_errors(data: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        EmpowermentModel.from_dict(data, "exp.yaml: sim.params.empowerment")
    assert "\n" not in str(err.value)


def test_files_written_before_the_section_mean_the_previous_model() -> None:
    old = {"p_social": 0.9, "beta": 0.1, "prior": "ngram", "prior_seed": 2}
    params = AgentParams.from_dict({**old, "empowerment": "owned=zero"})
    model = params.empowerment
    assert (model.name, model.beta, model.owned) == ("previous", 0.1, "zero")
    assert model.prior == PriorChoice("ngram", 2) and params.p_social == 0.9
    # as part of a bigger tree too
    sim = decode(SimConfig, {"agent_type": "empowerment", "params": old})
    assert sim.params.empowerment.prior.seed == 2
    # today's form is read as written
    now = AgentParams.from_dict({"empowerment": {"name": "paper-literal"}})
    assert now.empowerment == named_model("paper-literal")
