"""Ingredient productivity: share recipes made of ingredients that often combine successfully.

Some elements are hubs of the recipe tree: they take part in many recipes, so combining them
with almost anything has a fair chance to work. The protocol never sees the recipe graph, but
the agents' memories reveal the hubs: an element that appears in many distinct successful
pairs, and in few failed ones, is productive. Every element named in a received memory is
usable for one step, so a recipe made of productive ingredients hands its recipient elements
that are likely to produce something on its next attempt, together with a result it lacks.

Rules:

- productivity of an element: its distinct successful pairs over its distinct attempted
  pairs, smoothed towards a prior so that a single lucky pair does not make a hub;
- a successful recipe scores the mean productivity of its ingredients, an ingredient the
  recipient does not own counting more (it is the one that widens what it can combine);
- only recipes whose result the recipient lacks, never one it made or was sent before; the
  best scores first, then the most recent, one recipe per result and at most PER_STEP
  per step (after a burst of discoveries the rest waits for the next steps).

Statistics are updated from the new memories only, so the work per step grows with them and
with the recipes waiting for each agent.
"""

from collections import defaultdict

# Room for bursts of discoveries; beyond it, what is left waits for the next step.
PER_STEP = 10
# Smoothing: an element counts as having this many extra pairs at the prior success rate.
PRIOR_WEIGHT = 4.0
PRIOR_RATE = 0.2
# Weight of an ingredient the recipient lacks, relative to one it owns.
MISSING_BONUS = 2.0


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.per_step = min(PER_STEP, 20)  # never above the bottleneck of 20
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        # distinct pairs ever attempted / successful, and per element how many of each
        self.tried_pairs = set()
        self.success_pairs = set()
        self.tried = defaultdict(int)
        self.succeeded = defaultdict(int)
        # recipe key (ingredients sorted, result) -> (sender, memory index, step first seen)
        self.recipes = {}
        self.known = [set() for _ in range(n_agents)]
        self.pending = [set() for _ in range(n_agents)]
        self.sent_total = 0
        self.sent_score = 0.0

    def _count(self, first, second, result):
        pair = (first, second)
        elements = (first,) if first == second else pair
        if pair not in self.tried_pairs:
            self.tried_pairs.add(pair)
            for element in elements:
                self.tried[element] += 1
        if result is not None and pair not in self.success_pairs:
            self.success_pairs.add(pair)
            for element in elements:
                self.succeeded[element] += 1

    def _ingest(self, i_step, agent_states):
        for agent in range(self.n_agents):
            state = agent_states[agent]
            inventory = state["inventory"]
            self.inventories[agent].update(inventory[self.seen_inventory[agent] :])
            self.seen_inventory[agent] = len(inventory)
            memories = state["memories"]
            for index in range(self.seen_memories[agent], len(memories)):
                first, second, result = memories[index]
                first, second = min(first, second), max(first, second)
                self._count(first, second, result)
                if result is None:
                    continue
                key = (first, second, result)
                self.known[agent].add(key)
                self.pending[agent].discard(key)
                if key not in self.recipes:
                    self.recipes[key] = (agent, index, i_step)
                    for other in range(self.n_agents):
                        if other != agent:
                            self.pending[other].add(key)
            self.seen_memories[agent] = len(memories)

    def productivity(self, element):
        return (self.succeeded[element] + PRIOR_WEIGHT * PRIOR_RATE) / (
            self.tried[element] + PRIOR_WEIGHT
        )

    def _score(self, key, inventory):
        first, second, _ = key
        ingredients = (first,) if first == second else (first, second)
        total = 0.0
        for element in ingredients:
            weight = 1.0 if element in inventory else MISSING_BONUS
            total += weight * self.productivity(element)
        # a mean, so that a self-pair (one ingredient named twice) is not half as good
        return total / len(ingredients)

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        exchanges = {}
        for agent in range(self.n_agents):
            inventory = self.inventories[agent]
            pending = self.pending[agent]
            stale = [k for k in pending if k[2] in inventory or k in self.known[agent]]
            pending.difference_update(stale)
            ranked = sorted(
                ((self._score(k, inventory), self.recipes[k][2], k) for k in pending),
                reverse=True,
            )
            chosen = []
            results = set()
            for score, _, key in ranked:
                if key[2] in results:
                    continue
                results.add(key[2])
                chosen.append((score, key))
                if len(chosen) == self.per_step:
                    break
            if not chosen:
                continue
            exchanges[agent] = []
            for score, key in chosen:
                sender, index, _ = self.recipes[key]
                exchanges[agent].append((sender, index))
                pending.discard(key)
                self.known[agent].add(key)
                self.sent_total += 1
                self.sent_score += score
        return exchanges

    def get_logs(self):
        hubs = sorted(self.tried, key=lambda e: -self.productivity(e))[:5]
        return [
            {
                "metric_name": "successes_sent",
                "metric_description": "successful recipes sent, all steps and recipients",
                "metric_value": self.sent_total,
            },
            {
                "metric_name": "mean_sent_score",
                "metric_description": "mean ingredient-productivity score of the sent recipes",
                "metric_value": self.sent_score / self.sent_total if self.sent_total else 0.0,
            },
            {
                "metric_name": "top_hubs",
                "metric_description": "the five most productive elements at the end",
                "metric_value": ", ".join(hubs),
            },
        ]
