"""Rarity first: keep every result rare, by giving each one to very few agents.

Coverage counts elements that at least one agent owns, so an element owned by many agents is
worth nothing more to the group, while a rare one is the group's only foothold in its part of
the recipe tree. Sending a success to everyone who lacks its result undoes that for agents
that re-make what they are sent (the `previous` empowerment model): their inventories turn
into copies of each other and the union shrinks (measured with that model: below no sharing
at all; `calibrated-step`'s agents (issue 35's default) never re-make a received recipe,
docs/fidelity.md).
So the defining rule here is that a result stays rare: it goes to few agents, the rarest
first, and different agents get different rare results, so that each one explores a
different corner of the tree.

Rules:

- primary: a success goes only to agents that lack its result, and only while the result's
  holders (agents owning it plus agents it was sent to) are fewer than MAX_HOLDERS; the
  rarest result (fewest holders) goes first, then the most recently found, its newest
  recipe; the recipients are drawn at random among the agents that lack it;
- an agent makes one attempt per step, so it gets at most SUCCESSES_PER_STEP successes
  per step; the rest of the rare results wait for other agents or later steps;
- secondary: dead ends fill the rest of the bottleneck: failures, and successes whose result
  the agent owns, go to agents that hold both ingredients and have neither tried nor been
  sent the pair, most recent first (the memory saves an attempt that would add nothing);
- nothing is ever sent twice to the same agent, nor a pair it attempted itself.

Holders only grow (an agent sent a result that later makes it moves from one count to the
other), so a result that reached MAX_HOLDERS is dropped for good. Eligibility of dead ends is
kept up to date incrementally: a new memory is checked against every agent, and an agent's
new element against the pairs that use it.
"""

import random
from collections import defaultdict

BOTTLENECK = 20
# Agents that may own or have been sent a result before it stops being shared.
MAX_HOLDERS = 3
# Successes per recipient per step (it makes a single attempt per step).
SUCCESSES_PER_STEP = 1


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        self.owners = defaultdict(int)
        self.sent_to = defaultdict(set)  # result -> agents sent it that do not own it (yet)
        # pairs whose outcome each agent knows, by its own attempt or by a memory it was sent
        self.known_pairs = [set() for _ in range(n_agents)]
        # recipe key (ingredients sorted, result or None) -> (sender, memory index, step)
        self.recipes = {}
        self.by_element = defaultdict(list)  # element -> keys naming it
        self.dead_ends = [set() for _ in range(n_agents)]
        self.rare = {}  # result still shared -> its recipes, oldest first
        self.sent_successes = 0
        self.sent_dead_ends = 0

    def holders(self, result):
        return self.owners[result] + len(self.sent_to[result])

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
                if element not in self.inventories[agent]:
                    self.inventories[agent].add(element)
                    self.owners[element] += 1
                    self.sent_to[element].discard(agent)
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
                        self.rare.setdefault(result, []).append(key)
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

    def _route_rare(self, exchanges):
        for result in [r for r in self.rare if self.holders(r) >= MAX_HOLDERS]:
            del self.rare[result]
        results = list(self.rare)
        random.shuffle(results)
        results.sort(key=lambda r: (self.holders(r), -self.recipes[self.rare[r][-1]][2]))
        got = defaultdict(int)
        for result in results:
            room = MAX_HOLDERS - self.holders(result)
            agents = [
                a
                for a in range(self.n_agents)
                if got[a] < SUCCESSES_PER_STEP
                and result not in self.inventories[a]
                and a not in self.sent_to[result]
            ]
            random.shuffle(agents)
            for agent in agents:
                if room == 0:
                    break
                known = self.known_pairs[agent]
                key = next((k for k in reversed(self.rare[result]) if k[:2] not in known), None)
                if key is None:
                    continue
                self._send(agent, key, exchanges[agent])
                self.sent_to[result].add(agent)
                got[agent] += 1
                room -= 1
                self.sent_successes += 1

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        exchanges = {agent: [] for agent in range(self.n_agents)}
        self._route_rare(exchanges)
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
                "metric_description": "rare successes sent, all steps and recipients",
                "metric_value": self.sent_successes,
            },
            {
                "metric_name": "dead_ends_sent",
                "metric_description": "failures (or owned results) sent to holders of both "
                "ingredients",
                "metric_value": self.sent_dead_ends,
            },
        ]
