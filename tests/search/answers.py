"""Protocols as models write them, for the tests of reading answers: a draft and its final
version, helpers, snippets and usage examples beside a class, a docstring quoting a fence.
Each whole protocol here loads and runs in the sandbox."""

from tests.helpers import DATACLASS_PROTOCOL, FUTURE_ANNOTATIONS

DRAFT = """class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        return {a: [((a + 1) % self.n, 0)] for a in agent_states}"""

FINAL = '''import numpy as np


class TransmissionProtocol:
    """Each agent hears its ring neighbour's latest successes."""

    def __init__(self, n_agents, n_steps):
        self.n = n_agents
        self.sent = 0

    def share_memories(self, i_step, agent_states):
        exchanges = {}
        for agent in agent_states:
            teacher = (agent + 1) % self.n
            memories = agent_states[teacher]["memories"]
            wins = [k for k, m in enumerate(memories) if m[2] is not None][-3:]
            if wins:
                exchanges[agent] = [(teacher, k) for k in wins]
                self.sent += len(wins)
        return exchanges

    def get_logs(self):
        return [{"metric_name": "sent", "metric_description": "memories sent",
                 "metric_value": float(np.float64(self.sent))}]'''

OTHER = FINAL.replace("(agent + 1) % self.n", "(agent - 1) % self.n").replace(
    "ring neighbour's", "previous agent's"
)


USAGE = """p = TransmissionProtocol(4, 10)
states = {i: {"inventory": ("air",), "memories": ()} for i in range(4)}
print(p.share_memories(0, states))"""
KEY_CHANGE = """    def share_memories(self, i_step, agent_states):
        # the key change: only successes
        return {}"""


HELPERS = """import numpy as np

HORIZON = 3


def latest_wins(memories, k=HORIZON):
    return [i for i, m in enumerate(memories) if m[2] is not None][-k:]"""

USES_HELPERS = """class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        teachers = {a: (a + 1) % self.n for a in agent_states}
        return {
            a: [(t, k) for k in latest_wins(agent_states[t]["memories"])]
            for a, t in teachers.items()
        }"""


QUOTES_A_FENCE = '''import random


class TransmissionProtocol:
    """Shares one random memory.

    Example:
    ```
    TransmissionProtocol(3, 10).share_memories(0, states)
    ```
    """

    def __init__(self, n_agents, n_steps):
        self.n = n_agents

    def share_memories(self, i_step, agent_states):
        """Returns
```
{recipient: [(sender, index)]}
```
        """
        sender = random.randrange(self.n)
        memories = agent_states[sender]["memories"]
        if not memories:
            return {}
        return {a: [(sender, len(memories) - 1)] for a in agent_states if a != sender}'''


def final(keep: int) -> str:
    """FINAL keeping its agents' last ``keep`` successes: one protocol per answer style."""
    return FINAL.replace("[-3:]", f"[-{keep}:]")


def requested(code: str) -> str:
    """An answer in the requested format around ``code``."""
    return (
        "<reasoning>Neighbours pass on successes.</reasoning>\n<description>Ring sharing."
        f"</description>\n<logging>Counts what is sent.</logging>\n<code>\n{code}\n</code>\n"
    )


# Answers in the styles models write, each with the code it means.
MEANT: dict[str, tuple[str, str]] = {
    "draft in the reasoning, final in a fence": (
        f"<reasoning>\nA sketch:\n<code>\n{DRAFT}\n</code>\nIt sends stale memories; fixed "
        f"below.\n</reasoning>\n<description>d</description>\n\n```python\n{final(2)}\n```\n",
        final(2),
    ),
    "a usage example after the class": (
        f"```python\n{final(4)}\n```\n\nTo try it:\n```python\n{USAGE}\n```\n",
        final(4),
    ),
    "a key-change snippet after the class": (
        f"## Code\n```python\n{final(5)}\n```\n## What changed\n```python\n{KEY_CHANGE}\n```",
        final(5),
    ),
    "inline code in prose after the section": (
        requested(final(6)) + "It hinges on <code>share_memories</code> and <code>wins</code>.",
        final(6),
    ),
    "helpers in their own fence inside <code>": (
        f"<code>\n```python\n{HELPERS}\n```\n```python\n{USES_HELPERS}\n```\n</code>",
        f"{HELPERS}\n\n{USES_HELPERS}",
    ),
    "a docstring quoting a fence": (f"```python\n{QUOTES_A_FENCE}\n```", QUOTES_A_FENCE),
    "a @dataclass protocol": (
        requested(FUTURE_ANNOTATIONS + DATACLASS_PROTOCOL),
        (FUTURE_ANNOTATIONS + DATACLASS_PROTOCOL).strip(),
    ),
}
