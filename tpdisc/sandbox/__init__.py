"""Running untrusted protocol code in an isolated worker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpdisc.errors import ConfigError

if TYPE_CHECKING:
    from tpdisc.protocols.interface import ProtocolRunner
    from tpdisc.protocols.loader import SourceProtocol


def open_sandboxed(spec: SourceProtocol, n_agents: int, n_steps: int, seed: int) -> ProtocolRunner:
    raise ConfigError(
        f"{spec.origin}: untrusted protocol files need the sandbox, which this version lacks; "
        "pass --trusted to run the file in-process if you trust its code"
    )
