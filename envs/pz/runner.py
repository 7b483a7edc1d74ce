"""PettingZoo parallel envs stepped into puffgpu's arrays: every possible agent of every env is a
row, in env order, then the env's possible_agents order.

An agent that is not in env.agents (it left mid-episode, or has not appeared yet) is *masked*:
its row shows zeros, reward 0 and terminal 1 on every step, and its action mask is all zeros, so
its sampled action (never sent to the env) gets no policy gradient and no return flows through
the row; the row's value learns 0 for it. On the step an agent leaves, its row has that step's
reward and terminated/truncated like a Gymnasium env's episode end. When no agent is left the env
is reset at once (its first observations are written on that same step, as for Gymnasium envs).
Each agent's episode is logged when it ends (n counts agent episodes).
"""
from __future__ import annotations

import numpy as np

from ..errors import EnvError
from ..gym.runner import Runner, call, import_target, load_file
from ..gym.spaces import ActLayout, ObsLayout, gym_spaces, require


class PzRunner(Runner):
    """`count` PettingZoo parallel envs, len(possible_agents) rows each."""

    def __init__(self, spec, count):
        pettingzoo = require("pettingzoo", "PettingZoo", "pz")
        gym_spaces()
        self.spec = spec
        what = spec.get("name", "env")
        if spec.get("file"):
            fn = load_file(spec["file"], spec["factory"], what)
        else:
            fn = import_target(spec["target"], what)
        self.envs = []
        try:
            for _ in range(count):
                env = call(fn, what, **spec["kwargs"])
                if isinstance(env, pettingzoo.AECEnv) or not hasattr(env, "possible_agents"):
                    raise EnvError(f"{what}: {spec.get('target') or spec['file']} made {type(env).__name__}, not a "
                                   f"PettingZoo ParallelEnv (for an AEC env, name its parallel_env() function or "
                                   f"wrap it with pettingzoo.utils.conversions.aec_to_parallel)")
                self.envs.append(env)
        except BaseException:
            self.close()
            raise
        first = self.envs[0]
        self.agents = list(first.possible_agents)
        a0 = self.agents[0]
        obs_space, act_space = first.observation_space(a0), first.action_space(a0)
        for a in self.agents[1:]:
            for kind, mine, theirs in (("observation", first.observation_space(a), obs_space),
                                       ("action", first.action_space(a), act_space)):
                if mine != theirs:
                    raise EnvError(f"{what}: agent {a!r} has the {kind} space {mine!r}, agent {a0!r} {theirs!r}; "
                                   f"puffgpu's agents are rows of one policy and must share their spaces")
        self.act = ActLayout(act_space, root=f"action_space({a0!r})")
        self.obs = ObsLayout(obs_space, root=f"observation_space({a0!r})", mask_size=sum(self.act.sizes))
        self.has_masks = True  # absent agents are masked
        self.agents_per_env = len(self.agents)
        self.num_agents = count * self.agents_per_env
        self.ret = np.zeros(self.num_agents, np.float64)
        self.len = np.zeros(self.num_agents, np.int64)
        self.alive = np.zeros(self.num_agents, bool)
        self.scale = float(spec.get("reward_scale", 1.0))

    def _observe(self, e, observations, infos=None):
        """Rows of env e from an observation dict: present agents' rows written, absent ones zero
        and masked."""
        k = self.agents_per_env
        live = set(self.envs[e].agents)
        for j, a in enumerate(self.agents):
            r = e * k + j
            if a in live and a in observations:
                self.obs.write(observations[a], self.observations[r])
                if self.obs.mask_path is not None:
                    self.obs.write_mask(observations[a], self.masks[r])
                else:
                    self.masks[r] = 1
                self.alive[r] = True
            else:
                self.observations[r] = 0
                self.masks[r] = 0
                self.alive[r] = False

    def _reset_env(self, e, seed=None):
        obs, _ = self.envs[e].reset(seed=seed)
        self._observe(e, obs)
        k = self.agents_per_env
        self.ret[e * k:(e + 1) * k] = 0
        self.len[e * k:(e + 1) * k] = 0

    def reset(self, seed):
        for e in range(len(self.envs)):
            self._reset_env(e, int(seed) + e)
        self._clear_step()

    def step(self, actions, lo=0, hi=None):
        """One step of envs [lo, hi)."""
        hi = len(self.envs) if hi is None else hi
        k, read = self.agents_per_env, self.act.read
        for e in range(lo, hi):
            env, r0 = self.envs[e], e * k
            acts = {a: read(actions[r0 + j]) for j, a in enumerate(self.agents) if self.alive[r0 + j]}
            obs, rew, term, trunc, _ = env.step(acts)
            for j, a in enumerate(self.agents):
                r = r0 + j
                if not self.alive[r]:  # masked: nothing flows through the row
                    self.rewards[r], self.terminals[r], self.truncations[r] = 0.0, 1.0, 0.0
                    continue
                reward = float(rew.get(a, 0.0))
                te, tr = bool(term.get(a, False)), bool(trunc.get(a, False))
                self.ret[r] += reward
                self.len[r] += 1
                if te or tr or a not in env.agents:  # it left on this step
                    self.on_episode(e, {"episode_return": self.ret[r], "episode_length": float(self.len[r]),
                                        "score": self.ret[r]})
                    self.ret[r], self.len[r] = 0.0, 0
                    te = te or not tr  # an agent gone without a flag ended by the game's rules
                self.rewards[r] = reward * self.scale
                self.terminals[r] = 1.0 if te else 0.0
                self.truncations[r] = 1.0 if tr else 0.0
            if env.agents:
                self._observe(e, obs)
            else:  # everyone left: the next episode starts on this step
                self._reset_env(e)
