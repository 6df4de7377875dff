"""One step away: favour recipes the recipient can act on right now.

A successful recipe is most useful to an agent that owns one ingredient and lacks the
result. The memory lends it the missing ingredient and the result for its next attempt, so
the discovery is one step away: it can remake the result from its own ingredient and the
borrowed one, and the borrowed ingredient itself is new material next to everything it
owns. An agent that owns both ingredients could find the recipe alone, and one that owns
neither gets material further from what it knows; both are served after the one-step-away
recipes, those with no owned ingredient first since they lend two new elements.

Rules:

- only successes whose result the recipient lacks, never a recipe it made or was sent
  before;
- order: recipient owns exactly one ingredient, then none, then both; inside each tier the
  most recent recipe first (fresh discoveries are the frontier of the population);
- one recipe per result, at most PER_STEP per step (after a burst of discoveries the rest
  waits for the next steps).

The protocol remembers what it has read and processes only new memories and inventories.
"""

from collections import defaultdict

# Room for bursts of discoveries; beyond it, what is left waits for the next step.
PER_STEP = 10
# Rank of "owns k ingredients" (lower goes first).
ORDER = {1: 0, 0: 1, 2: 2}


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.per_step = min(PER_STEP, 20)  # never above the bottleneck of 20
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        # recipe key (ingredients sorted, result) -> (sender, memory index, step first seen)
        self.recipes = {}
        self.known = [set() for _ in range(n_agents)]
        self.pending = [set() for _ in range(n_agents)]
        self.sent_by_k = defaultdict(int)

    def _ingest(self, i_step, agent_states):
        for agent in range(self.n_agents):
            state = agent_states[agent]
            inventory = state["inventory"]
            self.inventories[agent].update(inventory[self.seen_inventory[agent] :])
            self.seen_inventory[agent] = len(inventory)
            memories = state["memories"]
            for index in range(self.seen_memories[agent], len(memories)):
                first, second, result = memories[index]
                if result is None:
                    continue
                key = (min(first, second), max(first, second), result)
                self.known[agent].add(key)
                self.pending[agent].discard(key)
                if key not in self.recipes:
                    self.recipes[key] = (agent, index, i_step)
                    for other in range(self.n_agents):
                        if other != agent:
                            self.pending[other].add(key)
            self.seen_memories[agent] = len(memories)

    @staticmethod
    def owned_ingredients(key, inventory):
        first, second, _ = key
        if first == second:
            return 2 if first in inventory else 0
        return (first in inventory) + (second in inventory)

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        exchanges = {}
        for agent in range(self.n_agents):
            inventory = self.inventories[agent]
            pending = self.pending[agent]
            pending.difference_update(
                [k for k in pending if k[2] in inventory or k in self.known[agent]]
            )
            ranked = []
            for key in pending:
                k = self.owned_ingredients(key, inventory)
                ranked.append((ORDER[k], -self.recipes[key][2], key, k))
            ranked.sort()
            out = []
            results = set()
            for _, _, key, k in ranked:
                if key[2] in results:
                    continue
                results.add(key[2])
                sender, index, _ = self.recipes[key]
                out.append((sender, index))
                pending.discard(key)
                self.known[agent].add(key)
                self.sent_by_k[k] += 1
                if len(out) == self.per_step:
                    break
            if out:
                exchanges[agent] = out
        return exchanges

    def get_logs(self):
        return [
            {
                "metric_name": f"sent_owning_{k}",
                "metric_description": f"successes sent to a recipient owning {k} ingredient(s)",
                "metric_value": self.sent_by_k[k],
            }
            for k in (0, 1, 2)
        ]
