"""Running untrusted protocol code in an isolated, confined worker process.

See ``docs/security.md`` for the threat model and the layers. The public surface:

- :func:`open_sandboxed` — a :class:`~tpdisc.protocols.interface.ProtocolRunner` for one
  simulation of untrusted source;
- :class:`SandboxedSource` — a ``SourceProtocol`` that runs in the sandbox, with its own
  :class:`SandboxConfig` (time and memory limits, the explicit unsafe mode): the one way to
  run untrusted source (a plain ``SourceProtocol`` refuses to);
- :func:`precheck` — fast, readable problems in a source, for feedback to an LLM;
- :class:`SandboxError` — the typed failure (``kind``, ``reason``);
- :func:`sandbox_support` — whether this platform can enforce the seccomp layer;
- :func:`sandbox_walls` — which walls workers actually get here (seccomp, empty root);
- :func:`sandbox_untrusted` — what a command line does with the protocols it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tpdisc.protocols.interface import ProtocolRunner, ProtocolSpec
from tpdisc.protocols.loader import SourceProtocol
from tpdisc.sandbox import client
from tpdisc.sandbox.config import DEFAULT_TIME_LIMIT, SandboxConfig
from tpdisc.sandbox.errors import KINDS, SandboxError
from tpdisc.sandbox.policy import seccomp_support as sandbox_support
from tpdisc.sandbox.precheck import precheck
from tpdisc.sandbox.runner import UNSAFE_FLAG, SandboxWarning, open_sandboxed, refusal

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "KINDS",
    "UNSAFE_FLAG",
    "SandboxConfig",
    "SandboxError",
    "SandboxWarning",
    "SandboxedSource",
    "load_protocols",
    "open_sandboxed",
    "precheck",
    "sandbox_support",
    "sandbox_untrusted",
    "sandbox_walls",
]


@dataclass(frozen=True)
class SandboxedSource(SourceProtocol):
    """A :class:`SourceProtocol` with explicit sandbox limits (picklable, for executors)."""

    sandbox: SandboxConfig = field(default_factory=SandboxConfig)

    @classmethod
    def of(cls, spec: SourceProtocol, config: SandboxConfig) -> SandboxedSource:
        return cls(spec.name, spec.source, spec.origin, spec.trusted, config)

    def open(self, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
        if self.trusted:
            return super().open(n_agents, n_steps, seed)
        return open_sandboxed(self, n_agents, n_steps, seed, self.sandbox)


def sandbox_walls() -> dict[str, tuple[bool, str]]:
    """Which walls this process's workers get, each as (up, why not): ``seccomp`` (the
    filter) and ``namespaces`` (the empty root). Asks the zygote, which proved both before
    taking work, so this starts it (1–3 s) if it is not running."""
    supported, why = sandbox_support()
    try:
        zygote = client.get_zygote()
    except client.ZygoteError as err:
        raise SandboxError("sandbox", str(err)) from None
    if supported and not zygote.seccomp:
        supported, why = False, zygote.seccomp_reason
    return {
        "seccomp": (supported, why),
        "namespaces": (zygote.namespaces, zygote.namespaces_reason),
    }


def sandbox_untrusted(specs: list[ProtocolSpec], config: SandboxConfig) -> list[ProtocolSpec]:
    """Give every untrusted source protocol in ``specs`` the sandbox ``config``.

    Checks each untrusted source with the pre-check first (a refusal is one
    :class:`SandboxError` naming the file, the line and the reason), then the platform
    once, before anything runs: without seccomp, untrusted code is refused (one
    :class:`SandboxError` naming the first such file) unless ``config`` is the explicit
    unsafe mode. Baselines and trusted sources pass through unchanged.
    """
    untrusted = [s for s in specs if isinstance(s, SourceProtocol) and not s.trusted]
    if not untrusted:
        return specs
    for spec in untrusted:
        refuse_by_precheck(spec)
    supported, why = sandbox_support()
    if not supported and not config.allow_without_seccomp:
        raise SandboxError("unsupported", refusal(why), untrusted[0].origin)
    return [
        SandboxedSource.of(s, config) if isinstance(s, SourceProtocol) and not s.trusted else s
        for s in specs
    ]


def refuse_by_precheck(spec: SourceProtocol) -> None:
    """Refuse untrusted source the pre-check refuses, in one line naming its first problem
    (the search feeds them all back to the model; a user wants the first)."""
    problems = precheck(spec.source)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SandboxError(
            "precheck", f"refused by the pre-check: {problems[0]}{more}", spec.origin
        )


def load_protocols(
    texts: list[str],
    *,
    trusted: bool = False,
    sandbox: SandboxConfig | None = None,
    resolved: Mapping[str, ProtocolSpec] | None = None,
) -> list[ProtocolSpec]:
    """Protocols by baseline name or ``.py`` file, ready to evaluate: files run in the
    sandbox (limits ``sandbox``) unless ``trusted``, as ``tpdisc evaluate`` runs them.
    ``resolved``: texts already turned into protocols by a layer above (a search's
    protocols named ``RUN_DIR:NAME``, :func:`tpdisc.search.pick.run_references`)."""
    from tpdisc.protocols.resolve import resolve_protocol

    known = resolved or {}
    specs = [known.get(text) or resolve_protocol(text, trusted=trusted) for text in texts]
    return sandbox_untrusted(specs, sandbox or SandboxConfig())
