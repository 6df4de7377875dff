"""Targeted failures: tell each agent about the dead ends it could actually walk into.

A failed pair is useful only to an agent that could attempt it, that is one holding both
ingredients and not knowing the outcome yet: to it, the memory saves an attempt that would
have produced nothing (simulated agents do not attempt a pair known to fail; the default
empowerment agents know a received failure for their next choice only, so the saving is
that choice's). To anyone
else it is noise that takes a place in its attention and its social inventory: sending the
same failures to every agent instead was measured to cost about a tenth of the final
coverage with stochastic agents. The same holds for a successful pair
whose result the agent already owns: attempting it would add nothing to the agent nor to the
group, so it is routed like a failure.

Rules:

- dead ends (failures, and successes whose result the recipient owns) go only to agents that
  hold both ingredients and have neither tried nor been sent the pair, most recent first;
  an agent becomes a target the moment it acquires the second ingredient;
- up to SUCCESSES_PER_STEP successes whose result the recipient lacks are sent first (rarest
  result first, one recipe per result), since they are what opens new combinations, while
  dead ends fill the rest of the bottleneck;
- nothing is ever sent twice to the same agent, nor anything it attempted itself.

Eligibility is kept up to date incrementally: a new memory is checked against every agent,
and an agent's new element against the pairs that use it, so the work per step grows with
what changed rather than with the history.
"""

from collections import defaultdict

BOTTLENECK = 20
SUCCESSES_PER_STEP = 8
# Also route successes whose result the recipient owns as dead ends.
ROUTE_OWNED_RESULTS = True


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        self.owners = defaultdict(int)
        # pairs whose outcome each agent knows, by its own attempt or by a memory it was sent
        self.known_pairs = [set() for _ in range(n_agents)]
        # recipe key (ingredients sorted, result or None) -> (sender, memory index, step)
        self.recipes = {}
        self.by_element = defaultdict(list)  # element -> keys naming it
        self.dead_ends = [set() for _ in range(n_agents)]  # eligible dead ends per agent
        self.openers = [set() for _ in range(n_agents)]  # successes with a result it lacks
        self.sent_successes = 0
        self.sent_dead_ends = 0

    def _classify(self, agent, key):
        first, second, result = key
        if (first, second) in self.known_pairs[agent]:
            return
        inventory = self.inventories[agent]
        if result is not None and result not in inventory:
            self.openers[agent].add(key)
        elif first in inventory and second in inventory and (result is None or ROUTE_OWNED_RESULTS):
            self.openers[agent].discard(key)
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
            self.seen_memories[agent] = len(memories)
        for agent, gained in enumerate(gained_by):
            for element in gained:
                for key in self.by_element.get(element, ()):
                    self._classify(agent, key)
        for key in new_keys:
            for agent in range(self.n_agents):
                self._classify(agent, key)

    def _send(self, agent, key, out):
        sender, index, _ = self.recipes[key]
        out.append((sender, index))
        self.known_pairs[agent].add(key[:2])
        self.openers[agent].discard(key)
        self.dead_ends[agent].discard(key)

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        exchanges = {}
        for agent in range(self.n_agents):
            inventory = self.inventories[agent]
            known = self.known_pairs[agent]
            openers = self.openers[agent]
            openers.difference_update([k for k in openers if k[2] in inventory or k[:2] in known])
            ranked = sorted(openers, key=lambda k: (self.owners[k[2]], -self.recipes[k][2], k))
            out = []
            results = set()
            for key in ranked:
                if len(out) == SUCCESSES_PER_STEP:
                    break
                if key[2] not in results:
                    results.add(key[2])
                    self._send(agent, key, out)
            self.sent_successes += len(out)
            dead = self.dead_ends[agent]
            dead.difference_update([k for k in dead if k[:2] in known])
            room = BOTTLENECK - len(out)
            for key in sorted(dead, key=lambda k: (-self.recipes[k][2], k))[:room]:
                self._send(agent, key, out)
                self.sent_dead_ends += 1
            if out:
                exchanges[agent] = out
        return exchanges

    def get_logs(self):
        return [
            {
                "metric_name": "successes_sent",
                "metric_description": "successes whose result the recipient lacked",
                "metric_value": self.sent_successes,
            },
            {
                "metric_name": "dead_ends_sent",
                "metric_description": "failures (or owned results) sent to holders of both "
                "ingredients",
                "metric_value": self.sent_dead_ends,
            },
        ]
