"""Ingredient productivity: share recipes made of ingredients that often combine successfully.

Some elements are hubs of the recipe tree: they take part in many recipes, so combining them
with almost anything has a fair chance to work. The protocol never sees the recipe graph, but
the agents' memories reveal the hubs: an element that appears in many distinct successful
pairs, and in few failed ones, is productive. Every element named in a received memory is
usable for one step, so a recipe made of productive ingredients hands its recipient elements
that are likely to produce something on its next attempt, together with a result it lacks.

Handing the same recipes to everyone, however, makes agents that re-make what they
receive (the `previous` empowerment model) turn into copies of each other (measured with
that model: below no sharing at all; `calibrated-step`'s agents (issue 35's default) never re-make a
received recipe, docs/fidelity.md). So each recipe is handed to a single agent, the one
that gains most from its ingredients, and each agent gets one recipe per step, the most
productive one left for it.

Rules:

- primary: productivity of an element is its distinct successful pairs over its distinct
  attempted pairs, smoothed towards a prior so that a single lucky pair does not make a hub;
  a success scores, for a recipient that lacks its result, the mean productivity of its
  ingredients, an ingredient the recipient does not own counting MISSING_BONUS times (it is
  the one that widens what it can combine); the best (recipient, recipe) scores are served
  first, each recipe to at most COPIES agents over the whole game and each agent at most
  SUCCESSES_PER_STEP recipes per step (it makes a single attempt per step);
- secondary: dead ends fill the rest of the bottleneck: failures, and successes whose result
  the agent owns, go to agents that hold both ingredients and have neither tried nor been
  sent the pair, most recent first (the memory saves an attempt that would add nothing);
- nothing is ever sent twice to the same agent, nor a pair it attempted itself.

Statistics and the eligibility of dead ends are updated from the new memories and elements
only; the recipes still waiting for a recipient are kept in one set that shrinks as they go.
"""

import random
from collections import defaultdict

BOTTLENECK = 20
# Agents a recipe is handed to over the whole game (its finder aside).
COPIES = 1
# Successes per recipient per step (it makes a single attempt per step).
SUCCESSES_PER_STEP = 1
# Smoothing: an element counts as having this many extra pairs at the prior success rate.
PRIOR_WEIGHT = 4.0
PRIOR_RATE = 0.2
# Weight of an ingredient the recipient lacks, relative to one it owns.
MISSING_BONUS = 2.0


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
        # distinct pairs ever attempted / successful, and per element how many of each
        self.tried_pairs = set()
        self.tried = defaultdict(int)
        self.succeeded = defaultdict(int)
        self.sent_score = 0.0
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
                if (first, second) not in self.tried_pairs:
                    self.tried_pairs.add((first, second))
                    for element in {first, second}:
                        self.tried[element] += 1
                        self.succeeded[element] += result is not None
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

    def productivity(self, element):
        return (self.succeeded[element] + PRIOR_WEIGHT * PRIOR_RATE) / (
            self.tried[element] + PRIOR_WEIGHT
        )

    def score(self, key, inventory):
        first, second, _ = key
        ingredients = (first,) if first == second else (first, second)
        total = 0.0
        for element in ingredients:
            weight = 1.0 if element in inventory else MISSING_BONUS
            total += weight * self.productivity(element)
        # a mean, so that a self-pair (one ingredient named twice) is not half as good
        return total / len(ingredients)

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
        for negative, _, agent, key in options:
            if got[agent] >= SUCCESSES_PER_STEP or self.copies[key] >= COPIES:
                continue
            self._send(agent, key, exchanges[agent])
            got[agent] += 1
            self.copies[key] += 1
            if self.copies[key] == COPIES:
                self.waiting.discard(key)
            self.sent_successes += 1
            self.sent_score -= negative

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
                "metric_description": "successes sent, all steps and recipients",
                "metric_value": self.sent_successes,
            },
            {
                "metric_name": "dead_ends_sent",
                "metric_description": "failures (or owned results) sent to holders of both "
                "ingredients",
                "metric_value": self.sent_dead_ends,
            },
            {
                "metric_name": "mean_sent_score",
                "metric_description": "mean ingredient-productivity score of the sent recipes",
                "metric_value": self.sent_score / self.sent_successes
                if self.sent_successes
                else 0.0,
            },
            {
                "metric_name": "top_hubs",
                "metric_description": "the five most productive elements at the end",
                "metric_value": ", ".join(
                    sorted(self.tried, key=lambda e: -self.productivity(e))[:5]
                ),
            },
        ]
