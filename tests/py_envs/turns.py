"""An AEC (turn-based) PettingZoo env: two players take turns; the trainer takes parallel envs only,
so naming it must be refused with the hint to wrap it (tests/test_gym.py)."""
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv


class Turns(AECEnv):
    metadata = {"name": "turns_v0", "is_parallelizable": False}

    def __init__(self):
        super().__init__()
        self.possible_agents = ["a", "b"]

    def observation_space(self, agent):
        return spaces.Box(0, 1, (2,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = dict(self.rewards)
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = "a"

    def observe(self, agent):
        return np.zeros(2, np.float32)

    def step(self, action):
        self.agent_selection = "b" if self.agent_selection == "a" else "a"


def env():
    return Turns()
