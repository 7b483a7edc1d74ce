"""A PettingZoo parallel env whose agents leave mid-episode (tests/test_gym.py).

Agents a0..a3 start; agent ak leaves (terminated, reward 10 + k) when it plays 1 at step k + 1 or
later, else it gets 1 for playing 0 and 0 for 1. Agent "late" joins at step 2 and never leaves by
itself. At step `horizon` everyone still there is truncated, and the episode is over. The
observation is (agent index, step, a seeded random number).
"""
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

AGENTS = ["a0", "a1", "a2", "a3", "late"]


class Leaving(ParallelEnv):
    metadata = {"name": "leaving_v0"}

    def __init__(self, horizon=6):
        self.possible_agents = list(AGENTS)
        self.horizon = int(horizon)
        self.rng = np.random.default_rng(0)
        self.agents = []
        self.t = 0

    def observation_space(self, agent):
        return spaces.Box(-10, 10, (3,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def _ob(self, agent):
        return np.array([AGENTS.index(agent), self.t, self.rng.random()], np.float32)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = AGENTS[:4]
        return {a: self._ob(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        rew, term, trunc = {}, {}, {}
        stepped = list(self.agents)
        for a in stepped:
            k = AGENTS.index(a)
            leave = a != "late" and int(actions[a]) == 1 and self.t >= k + 1
            rew[a] = 10.0 + k if leave else float(int(actions[a]) == 0)
            term[a] = leave
            trunc[a] = self.t >= self.horizon and not leave
        self.agents = [a for a in stepped if not (term[a] or trunc[a])]
        joined = ["late"] if self.t == 2 and self.agents else []
        self.agents += joined
        obs = {a: self._ob(a) for a in stepped + joined}
        return obs, rew, term, trunc, {a: {} for a in obs}


def parallel_env(horizon=6):
    return Leaving(horizon)
