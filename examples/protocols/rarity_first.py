"""Rarity first: share only successful recipes whose result few agents own.

Coverage counts elements that at least one agent owns, so an element owned by many agents is
worth nothing more to the group, while a rare one is the group's only foothold in its part of
the recipe tree. Every element named in a received memory is usable for one step, so sending
a recipe whose result the recipient lacks lets it combine that rare result with its own,
different inventory: the combinations it tries are then the ones nobody else is likely to
have tried.

Rules:

- only successes are sent, and only to recipients that lack the result and did not make or
  receive the same recipe before;
- results owned by more than a fraction of the agents are not worth the attention any more:
  their recipes are dropped for good (owners only grow);
- the rarest result goes first; between equally rare results, the one fewer recipients got
  this step (so that different agents explore different rare elements), then the most
  recent;
- one recipe per result and at most PER_STEP recipes per step: an agent makes a single
  attempt per step, so after a burst of discoveries the rarest go at once and the rest wait
  for the following steps instead of crowding one step's attention.

Work per step grows with the new memories and the recipes waiting for each agent, not with
the whole history.
"""

import random
from collections import defaultdict

# Room for bursts of discoveries; beyond it, what is left waits for the next step.
PER_STEP = 10
# Results owned by more than this fraction of the agents no longer count as rare.
RARE_FRACTION = 0.5


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.per_step = min(PER_STEP, 20)  # never above the bottleneck of 20
        self.rare_limit = max(1, int(n_agents * RARE_FRACTION))
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        self.owners = defaultdict(int)
        # recipe key (ingredients sorted, result) -> (sender, memory index, step first seen)
        self.recipes = {}
        # keys each agent made itself or was sent: never sent (again) to it
        self.known = [set() for _ in range(n_agents)]
        # keys that may still be worth sending to each agent
        self.pending = [set() for _ in range(n_agents)]
        self.sent_total = 0
        self.sent_owner_share = 0.0

    def _ingest(self, i_step, agent_states):
        for agent in range(self.n_agents):
            state = agent_states[agent]
            inventory = state["inventory"]
            for element in inventory[self.seen_inventory[agent] :]:
                if element not in self.inventories[agent]:
                    self.inventories[agent].add(element)
                    self.owners[element] += 1
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

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        exposure = defaultdict(int)  # recipients given each result this step
        order = list(range(self.n_agents))
        random.shuffle(order)  # no agent always gets first pick of the exposure tie-break
        exchanges = {}
        for agent in order:
            inventory = self.inventories[agent]
            pending = self.pending[agent]
            stale = [
                key
                for key in pending
                if key[2] in inventory
                or self.owners[key[2]] > self.rare_limit
                or key in self.known[agent]
            ]
            pending.difference_update(stale)
            ranked = sorted(
                pending,
                key=lambda k: (self.owners[k[2]], exposure[k[2]], -self.recipes[k][2], k),
            )
            chosen = []
            results = set()
            for key in ranked:
                if key[2] in results:
                    continue
                results.add(key[2])
                chosen.append(key)
                if len(chosen) == self.per_step:
                    break
            if not chosen:
                continue
            exchanges[agent] = []
            for key in chosen:
                sender, index, _ = self.recipes[key]
                exchanges[agent].append((sender, index))
                pending.discard(key)
                self.known[agent].add(key)
                exposure[key[2]] += 1
                self.sent_total += 1
                self.sent_owner_share += self.owners[key[2]] / self.n_agents
        return exchanges

    def get_logs(self):
        mean_share = self.sent_owner_share / self.sent_total if self.sent_total else 0.0
        return [
            {
                "metric_name": "successes_sent",
                "metric_description": "successful recipes sent, all steps and recipients",
                "metric_value": self.sent_total,
            },
            {
                "metric_name": "mean_owner_share",
                "metric_description": "mean fraction of agents owning a sent result when sent",
                "metric_value": mean_share,
            },
        ]
