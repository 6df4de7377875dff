"""Specialised groups: share inside small teams first, across teams later.

Agents that borrow the same elements explore the same region of the recipe tree. Teams that
hear everything from each other build on each other's discoveries and stay in one region,
while different teams drift to different regions; what one team found is then exactly the
material the others lack. The protocol gives each team a wide channel inside and a narrow
one across, which widens as the game goes on: early on teammates' discoveries fill the
attention of an agent, later the other teams' regions come in.

Rules:

- agents are split into fixed teams of about TEAM_SIZE (consecutive ids);
- inside a team, always first: every success whose result the recipient lacks (most recent
  first), then failures to teammates holding both ingredients (a dead end of the team's
  region saves them an attempt);
- across teams, within a budget growing from CROSS_START memories per step at the start to
  the whole bottleneck at the end: successes whose result nobody in the recipient's team
  owns (what its team cannot pass on), rarest first, then other teams' failures the
  recipient could attempt;
- nothing is sent twice to the same agent, nor a recipe it made itself; one recipe per
  result per step; never more than the bottleneck of 20.

Cutting teams off entirely for the first steps was tried and costs much (a tenth of the game
in isolation lost about an eighth of the final coverage with stochastic agents): knowledge
compounds, so the cross-team channel is narrow, never closed.

The protocol reads only new memories and inventories at each step.
"""

from collections import defaultdict

BOTTLENECK = 20
TEAM_SIZE = 3
# Memories per step that may come from other teams: CROSS_START at the first step, growing
# linearly to the whole bottleneck at the last.
CROSS_START = 4


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.n_agents = n_agents
        self.n_steps = max(1, n_steps)
        n_teams = max(1, round(n_agents / TEAM_SIZE))
        self.team = [agent * n_teams // n_agents for agent in range(n_agents)]
        self.n_teams = n_teams
        self.seen_memories = [0] * n_agents
        self.seen_inventory = [0] * n_agents
        self.inventories = [set() for _ in range(n_agents)]
        self.owners = defaultdict(int)
        self.team_owners = defaultdict(int)  # (team, element) -> members owning it
        # pairs whose outcome each agent knows, by its own attempt or by a memory sent to it
        self.known_pairs = [set() for _ in range(n_agents)]
        # recipe key (ingredients sorted, result or None) -> (sender, memory index, step)
        self.recipes = {}
        self.failures_by_element = defaultdict(list)
        # per agent: successes with a result it lacks, failures it could attempt; each split
        # by whether a teammate made them
        self.successes = [({}, {}) for _ in range(n_agents)]
        self.dead_ends = [({}, {}) for _ in range(n_agents)]
        self.sent = {"inside": 0, "across": 0, "failures": 0}

    def _channel(self, agent, key):
        return 0 if self.team[self.recipes[key][0]] == self.team[agent] else 1

    def _consider_failure(self, agent, key):
        first, second, _ = key
        inventory = self.inventories[agent]
        if first in inventory and second in inventory and key[:2] not in self.known_pairs[agent]:
            self.dead_ends[agent][self._channel(agent, key)][key] = None

    def _ingest(self, i_step, agent_states):
        new_failures = []
        gains = []
        for agent in range(self.n_agents):
            state = agent_states[agent]
            inventory = state["inventory"]
            gained = inventory[self.seen_inventory[agent] :]
            self.seen_inventory[agent] = len(inventory)
            for element in gained:
                if element not in self.inventories[agent]:
                    self.inventories[agent].add(element)
                    self.owners[element] += 1
                    self.team_owners[self.team[agent], element] += 1
                    gains.append((agent, element))
            memories = state["memories"]
            for index in range(self.seen_memories[agent], len(memories)):
                first, second, result = memories[index]
                first, second = min(first, second), max(first, second)
                self.known_pairs[agent].add((first, second))
                key = (first, second, result)
                if key in self.recipes:
                    continue
                self.recipes[key] = (agent, index, i_step)
                if result is None:
                    self.failures_by_element[first].append(key)
                    if second != first:
                        self.failures_by_element[second].append(key)
                    new_failures.append(key)
                    continue
                for other in range(self.n_agents):
                    if other != agent:
                        self.successes[other][self._channel(other, key)][key] = None
            self.seen_memories[agent] = len(memories)
        for agent, element in gains:
            for key in self.failures_by_element.get(element, ()):
                self._consider_failure(agent, key)
        for key in new_failures:
            for agent in range(self.n_agents):
                self._consider_failure(agent, key)

    def cross_budget(self, i_step):
        progress = min(1.0, i_step / self.n_steps)
        return round(CROSS_START + (BOTTLENECK - CROSS_START) * progress)

    def _newest_first(self, pool):
        return sorted(pool, key=lambda k: (-self.recipes[k][2], k))

    def _take(self, agent, keys, pool, out, results, limit):
        """Send ``keys`` in order from ``pool`` while ``out`` is under ``limit``; count them."""
        before = len(out)
        for key in keys:
            if len(out) >= limit:
                break
            if key[2] is not None and key[2] in results:
                continue
            sender, index, _ = self.recipes[key]
            out.append((sender, index))
            self.known_pairs[agent].add(key[:2])
            if key[2] is not None:
                results.add(key[2])
            del pool[key]
        return len(out) - before

    def share_memories(self, i_step, agent_states):
        self._ingest(i_step, agent_states)
        cross_budget = self.cross_budget(i_step)
        exchanges = {}
        for agent in range(self.n_agents):
            inventory = self.inventories[agent]
            known = self.known_pairs[agent]
            team = self.team[agent]
            inside, outside = self.successes[agent]
            for pool in (inside, outside):
                for key in [k for k in pool if k[2] in inventory or k[:2] in known]:
                    del pool[key]
            dead_inside, dead_outside = self.dead_ends[agent]
            for pool in (dead_inside, dead_outside):
                for key in [k for k in pool if k[:2] in known]:
                    del pool[key]
            out = []
            results = set()  # one recipe per result per step
            sent = self.sent

            keys = self._newest_first(inside)
            sent["inside"] += self._take(agent, keys, inside, out, results, BOTTLENECK)
            keys = self._newest_first(dead_inside)
            sent["failures"] += self._take(agent, keys, dead_inside, out, results, BOTTLENECK)

            limit = min(BOTTLENECK, len(out) + cross_budget)
            # a result a teammate owns will come from inside; rarest of the rest first
            keys = sorted(
                (k for k in outside if not self.team_owners[team, k[2]]),
                key=lambda k: (self.owners[k[2]], -self.recipes[k][2], k),
            )
            sent["across"] += self._take(agent, keys, outside, out, results, limit)
            keys = self._newest_first(dead_outside)
            sent["failures"] += self._take(agent, keys, dead_outside, out, results, limit)
            if out:
                exchanges[agent] = out
        return exchanges

    def get_logs(self):
        return [
            {
                "metric_name": "sent_inside_team",
                "metric_description": "successes sent between teammates",
                "metric_value": self.sent["inside"],
            },
            {
                "metric_name": "sent_across_teams",
                "metric_description": "successes sent to another team that lacked the result",
                "metric_value": self.sent["across"],
            },
            {
                "metric_name": "failures_sent",
                "metric_description": "failures sent to holders of both ingredients",
                "metric_value": self.sent["failures"],
            },
            {
                "metric_name": "teams",
                "metric_description": "number of teams",
                "metric_value": self.n_teams,
            },
        ]
