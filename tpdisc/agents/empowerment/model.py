"""The empowerment model's parameter section: every choice the reference leaves open.

Brändle et al.'s model, as the reference study describes it, fixes the value of a pair
(``P(success) · Σ_r P(r) · EmpItem(r)``), the per-element noise, the softmax and what
attempts teach; it leaves open how that meets a game where agents receive each other's
memories. :class:`EmpowermentModel` holds each such choice as a named field, in the config
tree at ``sim.params.empowerment``; :data:`MODELS` names complete sets of them
(``--empowerment-model``). ``docs/fidelity.md`` measures each choice against the
reference's published protocols and explains the default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from tpdisc.config_tree import decode, encode_fields, merged
from tpdisc.errors import ConfigError, unknown

RECEIVED = ("item", "prior", "zero")
OWNED = ("zero", "renormalise", "ignore")
FALLBACK = ("untried", "any")
REMEMBER = ("always", "step")
FAILURES = ("always", "step", "never")
OWNS = ("inventory", "usable")
BIAS = ("any", "unowned")
NOISE = ("element", "pair")
SUCCESS = ("prior", "base-rate")


@dataclass(frozen=True)
class PriorChoice:
    """Which prior the agents read: its element-vector backend (``ngram``,
    ``fasttext:PATH``, ``minilm``) and its seed (cross-validation folds and model
    initialisation; each seed is a different, equally good prior)."""

    backend: str = "ngram"
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.backend:
            raise ConfigError("prior backend: expected ngram, fasttext:PATH or minilm")
        if self.seed < 0:
            raise ConfigError(f"prior seed: expected a whole number >= 0, got {self.seed}")


@dataclass(frozen=True)
class EmpowermentModel:
    """How an empowerment agent turns its prior and what it knows into choices.

    - ``name``: the named model these settings started from (:data:`MODELS`); fields given
      beside it override that model's.
    - ``beta``, ``zscore``: the softmax's temperature, on z-scored values (as Brändle et
      al.'s code does) or on the raw empowerment.
    - ``received``: what a received successful memory makes of its pair: a certain success
      worth ``EmpItem`` of its result times ``received_worth`` (``item``, the reference's
      words), nothing certain (``prior``: the pair keeps its prior value), or a known pair
      worth nothing (``zero``, as if the agent had made it).
    - ``remember``: how long what a received success teaches (``item`` or ``zero``) is
      known: for good (``always``) or for the agent's next choice only, while its elements
      are usable (``step``). ``received=prior`` is the success's ``never``.
    - ``failures``: how long a received failure is a certain failure (worth nothing): for
      good (``always``), for the agent's next choice only, like the social inventory
      (``step``), or not at all (``never``). Own attempts are known for good.
    - ``owns``: what the agent counts as owned when it values outcomes: its inventory
      (``inventory``), or also the elements usable this step from its social inventory
      (``usable``): making one of those is worth nothing that step, so re-making a
      received recipe waits, and pairs with a received element are valued for what
      they can add.
    - ``owned``: inside the sum over results, P(r) renormalised over the results the agent
      lacks (``renormalise``), owned results keeping their probability and worth 0
      (``zero``, the reference's text), or ownership ignored there (``ignore``).
    - ``bias``: which pairs the social bias keeps: those using any element of the social
      inventory (``any``), or only those using one the agent does not own (``unowned``).
    - ``noise``, ``noise_sd``: the per-agent multiplicative noise ~ N(1, sd), drawn once
      per element (``element``, on EmpItem) or per pair (``pair``, on P(success)).
    - ``success``: P(success) as the prior's link model gives it (``prior``; it was trained
      on successes oversampled to match failures, as Brändle et al.'s was), or corrected
      back to the share of pairs that succeed in the prior's graph (``base-rate``: its odds
      times π / (1 − π), about 1 in 75 for Little Alchemy 2).
    - ``fallback``: when no candidate is worth anything, choose uniformly among the
      candidates whose outcome the agent does not know (``untried``) or among all (``any``).
    - ``prior``: the prior's backend and seed.
    """

    name: str = "calibrated-text"
    beta: float = 4.0
    zscore: bool = True
    received: str = "item"
    received_worth: float = 1.0
    remember: str = "always"
    failures: str = "step"
    owns: str = "inventory"
    owned: str = "renormalise"
    bias: str = "unowned"
    noise: str = "element"
    noise_sd: float = 0.1
    success: str = "prior"
    fallback: str = "untried"
    prior: PriorChoice = field(default_factory=PriorChoice)

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("received", self.received, RECEIVED),
            ("remember", self.remember, REMEMBER),
            ("failures", self.failures, FAILURES),
            ("owns", self.owns, OWNS),
            ("owned", self.owned, OWNED),
            ("bias", self.bias, BIAS),
            ("noise", self.noise, NOISE),
            ("success", self.success, SUCCESS),
            ("fallback", self.fallback, FALLBACK),
        ):
            if value not in allowed:
                raise ConfigError(
                    f"empowerment model {name}={value!r}; choose from {', '.join(allowed)}"
                )
        for number, x, low in (
            ("beta", self.beta, 1e-9),
            ("noise_sd", self.noise_sd, 0.0),
            ("received_worth", self.received_worth, 0.0),
        ):
            if not (math.isfinite(x) and x >= low):
                raise ConfigError(f"empowerment model {number}={x!r}: expected a number >= {low:g}")

    @property
    def label(self) -> str:
        """``calibrated (β 0.5)``: what tables and reports call the model."""
        return f"{self.name} (β {self.beta:g})"

    def changes(self) -> str:
        """The fields that differ from the named model's, as ``choices`` text."""
        base = named_model(self.name) if self.name in MODELS else EmpowermentModel()
        parts = []
        for f in fields(self):
            if f.name in ("name", "prior"):
                continue
            value = getattr(self, f.name)
            if value != getattr(base, f.name):
                parts.append(f"{f.name}={_text(value)}")
        return ",".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return encode_fields(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "empowerment") -> EmpowermentModel:
        """The named model (``name``, default :data:`DEFAULT_MODEL`), then ``choices`` text
        (``"beta=0.05,owned=zero"``), then the fields given, each overriding the one before."""
        data = dict(data)
        name = data.pop("name", DEFAULT_MODEL)
        if not isinstance(name, str) or name not in MODELS:
            raise ConfigError(
                f"{where}.name: unknown empowerment model {str(name)[:40]!r}; "
                f"choose from {', '.join(MODELS)}"
            )
        base = named_model(name)
        text = data.pop("choices", None)
        if text:
            if not isinstance(text, str):
                raise ConfigError(f"{where}.choices: expected text such as 'owned=zero'")
            try:
                base = base.with_choices(text)
            except ConfigError as err:
                raise ConfigError(f"{where}.choices: {err}") from None
        given = decode(cls, {**base.to_dict(), **data}, where)
        return replace(given, name=name)

    def with_choices(self, text: str) -> EmpowermentModel:
        """This model with ``"zscore=no,owned=zero"`` applied (unnamed fields kept)."""
        return replace(self, **choice_fields(text))

    @classmethod
    def parse(cls, text: str) -> EmpowermentModel:
        """``--empowerment-choices`` text over the default model."""
        return named_model(DEFAULT_MODEL).with_choices(text)


def choice_fields(text: str) -> dict[str, Any]:
    """The fields that choices text such as ``"zscore=no,owned=zero"`` sets, typed."""
    values: dict[str, Any] = {}
    default = EmpowermentModel()
    kinds = {f.name: type(getattr(default, f.name)) for f in fields(default)}
    del kinds["name"], kinds["prior"]
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or name not in kinds:
            raise ConfigError(
                f"empowerment choices {text[:80]!r}: expected name=value with name among "
                f"{', '.join(kinds)}"
            )
        if kinds[name] is bool:
            if value not in ("yes", "no", "true", "false"):
                raise ConfigError(f"empowerment choice {name}={value!r}; use yes or no")
            values[name] = value in ("yes", "true")
        elif kinds[name] is float:
            try:
                values[name] = float(value)
            except ValueError:
                raise ConfigError(
                    f"empowerment choice {name}={value!r}: expected a number"
                ) from None
        else:
            values[name] = value
    return values


def overridden(section: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """The empowerment section ``section`` (say, a run's or a file's, every field spelled
    out) with ``override`` (say, the command line's) on top, as its user means it: a model
    named in ``override`` replaces the section's fields but its prior, and ``override``'s
    choices text wins over the section's fields (within ``override``, its fields win, as
    in :meth:`EmpowermentModel.from_dict`)."""
    base = {k: v for k, v in section.items() if k == "prior" or "name" not in override}
    changes = dict(override)
    text = changes.pop("choices", None)
    if text:
        if not isinstance(text, str):
            raise ConfigError("empowerment choices: expected text such as 'owned=zero'")
        changes = {**choice_fields(text), **changes}
    return merged(base, changes)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:g}" if isinstance(value, float) else str(value)


# Complete sets of choices by name (the fields' defaults are the default model's).
# ``calibrated-text`` (the default, issue 45): the reference's text on what agents make of
# received memories, on ``calibrated``'s scale (β 4 on z-scored values): a received success
# is a certain success worth EmpItem of its result (``item``), the social bias keeps
# "combinations involving at least one socially received element", an element the agent
# does not own (``unowned``), and a received failure is known for the agent's next choice
# only (issue 35; the text says "deterministic"). Random sharing is worth nothing with it,
# as in the reference (docs/fidelity.md). ``calibrated-step`` (issue 35's default): a
# received success marks its pair as tried, worth nothing, for good (``zero``), and the
# social bias on any received element. ``calibrated``: the default of issue 25's study: the
# same with a received failure known for good; a flat softmax (β 4 on z-scored values) over
# the pairs worth something. ``paper-literal`` reads the reference's text literally: its
# temperature (0.05, on z-scored values as in Brändle et al.'s code), a received success a
# certain one for good, owned results worth 0 inside the sum, failures for good, the social
# bias of its time (any received element). ``previous`` is tpdisc's default before issue
# 25. Each older model is kept so that its results can be reproduced.
MODELS: dict[str, dict[str, Any]] = {
    "calibrated-text": {},
    "calibrated-step": {"received": "zero", "bias": "any"},
    "calibrated": {"received": "zero", "failures": "always", "bias": "any"},
    "paper-literal": {"beta": 0.05, "owned": "zero", "failures": "always", "bias": "any"},
    "previous": {"beta": 0.5, "failures": "always", "bias": "any"},
}
DEFAULT_MODEL = "calibrated-text"


def named_model(name: str) -> EmpowermentModel:
    if name not in MODELS:
        raise ConfigError(unknown("empowerment model", name, MODELS))
    return replace(EmpowermentModel(), name=name, **MODELS[name])


def model_names() -> tuple[str, ...]:
    return tuple(MODELS)
