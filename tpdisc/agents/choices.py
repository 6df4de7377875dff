"""Modelling choices of the empowerment agents that the published description leaves open.

The defaults are the ones ``docs/fidelity.md`` found to match the reference's three
calibration anchors best; the other values are kept for the sensitivity analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

from tpdisc.errors import ConfigError

RECEIVED = ("item", "prior")
OWNED = ("zero", "renormalise", "ignore")
FALLBACK = ("untried", "any")


@dataclass(frozen=True)
class EmpowermentChoices:
    """How an empowerment agent turns its prior and knowledge into choices.

    - ``zscore``: z-score the candidates' empowerment before the softmax with temperature
      beta (Brändle et al.'s softmax does), or use the raw values.
    - ``received``: a received successful memory makes its pair a certain success worth
      ``EmpItem`` of its known result (``item``), or leaves the pair to the prior
      (``prior``; received failures still count as known).
    - ``owned``: inside the sum over results, P(r) is renormalised over the results the
      agent lacks (``renormalise``, the default); or an owned result keeps its probability
      and is worth 0 (``zero``); or ownership is ignored there (``ignore``: the sum counts
      every result's children).
    - ``fallback``: when no candidate has positive empowerment, choose uniformly among the
      candidates whose outcome the agent does not know (``untried``), or among all
      candidates (``any``).
    """

    zscore: bool = True
    received: str = "item"
    owned: str = "renormalise"
    fallback: str = "untried"

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("received", self.received, RECEIVED),
            ("owned", self.owned, OWNED),
            ("fallback", self.fallback, FALLBACK),
        ):
            if value not in allowed:
                raise ConfigError(
                    f"empowerment choice {name}={value!r}; choose from {', '.join(allowed)}"
                )

    @classmethod
    def parse(cls, text: str) -> EmpowermentChoices:
        """``"zscore=no,owned=renormalise"`` (unnamed fields keep their defaults)."""
        fields: dict[str, object] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            name, value = name.strip(), value.strip()
            if not sep or name not in ("zscore", "received", "owned", "fallback"):
                raise ConfigError(
                    f"empowerment choices {text!r}: expected name=value with name among "
                    "zscore, received, owned, fallback"
                )
            if name == "zscore":
                if value not in ("yes", "no", "true", "false"):
                    raise ConfigError(f"empowerment choice zscore={value!r}; use yes or no")
                fields[name] = value in ("yes", "true")
            else:
                fields[name] = value
        return cls(**fields)  # type: ignore[arg-type]

    def label(self) -> str:
        return (
            f"zscore={'yes' if self.zscore else 'no'},received={self.received},"
            f"owned={self.owned},fallback={self.fallback}"
        )
