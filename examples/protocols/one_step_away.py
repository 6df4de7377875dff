"""One step away: successes go to agents that own one ingredient and lack the result.

A successful recipe is most useful to an agent that owns one ingredient and lacks the
result. The memory lends it the missing ingredient and the result for its next attempt, so
the discovery is one step away: the borrowed ingredient is new material next to everything it
owns, and the recipe ties it to the agent's own part of the tree. An agent that owns both
ingredients could find the recipe alone, and one that owns neither gets material far from
what it knows: neither is sent the success.

Handing a success to every agent that lacks it, however, makes agents that re-make what
they receive (the `previous` empowerment model) turn into copies of each other (measured
with that model: below no sharing at all; `calibrated-step`'s agents (issue 35's default)
never re-make a received recipe, docs/fidelity.md).
So each recipe goes to at most COPIES one-step-away agents, and each agent gets one per step.

Rules:

- primary: a success is sent only to an agent that owns exactly one of its two ingredients
  and lacks its result; the most recent recipes go first; each recipe to at most COPIES
  agents over the whole game (agents drawn at random among those one step away) and each
  agent at most SUCCESSES_PER_STEP per step (it makes a single attempt per step);
- secondary: dead ends fill the rest of the bottleneck: failures, and successes whose result
  the agent owns, go to agents that hold both ingredients and have neither tried nor been
  sent the pair, most recent first (the memory saves an attempt that would add nothing);
- nothing is ever sent twice to the same agent, nor a pair it attempted itself.

The eligibility of dead ends is updated from the new memories and elements only; the recipes
still waiting for recipients are kept in one set that shrinks as they go.
"""

import random
from collections import defaultdict

BOTTLENECK = 20
# One-step-away agents a recipe is handed to over the whole game.
COPIES = 2
# Successes per recipient per step (it makes a single attempt per step).
SUCCESSES_PER_STEP = 1


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        # pairs whose outcome each agent knows, by its own attempt or by a memory it was sent
        self.known_pairs = [set() for _ in range(n_agents)]
        # recipe key (ingredients sorted, result or None) -> (sender, memory index, step)
        self.recipes = {}
        self.by_element = defaultdict(list)  # element -> keys naming it
        self.dead_ends = [set() for _ in range(n_agents)]
        self.waiting = set()  # successes not yet handed to COPIES agents
        self.copies = defaultdict(int)
        self.sent_successes = 0
        self.sent_dead_ends = 0

    def _classify(self, agent, key):
        first, second, result = key
        inventory = self.inventories[agent]
        if (
            (first, second) not in self.known_pairs[agent]
            and first in inventory
            and second in inventory
            and (result is None or result in inventory)
        ):
            self.dead_ends[agent].add(key)

    def _ingest(self, i_step, agent_states):
        new_keys = []
        gained_by = []
        for agent in range(self.n_agents):
            state = agent_states[agent]
            inventory = state["inventory"]
            gained = inventory[self.seen_inventory[agent] :]
            self.seen_inventory[agent] = len(inventory)
            for element in gained:
                self.inventories[agent].add(element)
            gained_by.append(gained)
            memories = state["memories"]
            for index in range(self.seen_memories[agent], len(memories)):
                first, second, result = memories[index]
                first, second = min(first, second), max(first, second)
                self.known_pairs[agent].add((first, second))
                key = (first, second, result)
                if key not in self.recipes:
                    self.recipes[key] = (agent, index, i_step)
                    for element in {first, second, result} - {None}:
                        self.by_element[element].append(key)
                    new_keys.append(key)
                    if result is not None:
                        self.waiting.add(key)
            self.seen_memories[agent] = len(memories)
        for agent, gained in enumerate(gained_by):
            for element in gained:
                for key in self.by_element.get(element, ()):
                    self._classify(agent, key)
        for key in new_keys:
            for agent in range(self.n_agents):
                self._classify(agent, key)

    def _send(self, agent, key, out):
        out.append(self.recipes[key][:2])
        self.known_pairs[agent].add(key[:2])
        self.dead_ends[agent].discard(key)

    def score(self, key, inventory):
        """The recipe's step for a one-step-away recipient, None for anyone else."""
        first, second, _ = key
        if first != second and (first in inventory) != (second in inventory):
            return self.recipes[key][2]
        return None

    def _route(self, exchanges):
        options = []
        useless = []
        for key in self.waiting:
            lacking = [
                agent
                for agent in range(self.n_agents)
                if key[2] not in self.inventories[agent] and key[:2] not in self.known_pairs[agent]
            ]
            if not lacking:  # for good: owners and known pairs only grow
                useless.append(key)
            for agent in lacking:
                score = self.score(key, self.inventories[agent])
                if score is not None:
                    options.append((-score, random.random(), agent, key))
        self.waiting.difference_update(useless)
        options.sort()
        got = defaultdict(int)
        for _, _, agent, key in options:
            if got[agent] >= SUCCESSES_PER_STEP or self.copies[key] >= COPIES:
                continue
            self._send(agent, key, exchanges[agent])
            got[agent] += 1
            self.copies[key] += 1
            if self.copies[key] == COPIES:
                self.waiting.discard(key)
            self.sent_successes += 1

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        exchanges = {agent: [] for agent in range(self.n_agents)}
        self._route(exchanges)
        for agent, out in exchanges.items():
            dead = self.dead_ends[agent]
            known = self.known_pairs[agent]
            dead.difference_update([k for k in dead if k[:2] in known])
            room = BOTTLENECK - len(out)
            for key in sorted(dead, key=lambda k: (-self.recipes[k][2], k))[:room]:
                self._send(agent, key, out)
                self.sent_dead_ends += 1
        return {agent: out for agent, out in exchanges.items() if out}

    def get_logs(self):
        return [
            {
                "metric_name": "successes_sent",
                "metric_description": "successes sent to agents owning one ingredient",
                "metric_value": self.sent_successes,
            },
            {
                "metric_name": "dead_ends_sent",
                "metric_description": "failures (or owned results) sent to holders of both "
                "ingredients",
                "metric_value": self.sent_dead_ends,
            },
        ]
