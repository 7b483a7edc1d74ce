"""Evaluate a checkpoint: watch it play, measure it, or record it.

    python -m trainer.eval --env platformer                      # latest checkpoint, in a window
    python -m trainer.eval --env platformer PATH.bin             # a given checkpoint
    python -m trainer.eval --env platformer --headless --episodes 1000   # perf over 1000 episodes
    python -m trainer.eval --env platformer --gif run.gif        # one episode to a GIF (no display)
    python -m trainer.eval --env platformer --headless --random  # the same measure for a random policy
    python -m trainer.eval --env platformer --checkpoint-dir runs/ck   # latest under another folder

Headless counting is fair: every env contributes exactly its first k episodes (k = episodes /
parallel envs, rounded up). Counting whatever finishes first would over-count short episodes
(early deaths). Envs in server processes (`[env] isolate = 1`) are counted per process, each its
first k to finish, which is fair only for episodes of one length; so a Python env, whose default
is worker processes, is evaluated in this process (its kind's evaluation values set isolate = 0).
Sampling is stochastic, as in training; --deterministic takes each discrete head's most likely legal
choice and each continuous head's mean μ instead. The env's action mask applies
as in training. --random replaces the policy by uniform random actions (each discrete head uniform
over its legal choices, each continuous head N(0, 1), what an untrained policy samples): the
baseline a trained policy's figure is read against. A picture env takes the picture size the
checkpoint was trained on (its sidecar says). Config flags (--env.frameskip 2,
--base.checkpoint_dir DIR, …) apply; --checkpoint-dir DIR is --base.checkpoint_dir, spelled as
trainer.run accepts it too. What only shapes training is off (an env kind's evaluation values: a
DDNet env's episodes start at the map's spawn, never from its curriculum).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

import envs  # noqa: E402
from puffbase.image import write_gif  # noqa: E402
from envs.interface import PICTURE_KEYS  # noqa: E402

from . import checkpoint as ckpt  # noqa: E402
from . import config as config_mod  # noqa: E402
from .gpu import GPUError, get_gpu  # noqa: E402
from .policy import Policy, Rollout, RolloutStep  # noqa: E402
from .spec import PolicySpec  # noqa: E402
from .autotune import attach  # noqa: E402
from puffbase.console import safe_console  # noqa: E402


class Evaluator:
    """A policy from a checkpoint driving N agents of an env, one GPU step per env step; with
    checkpoint=None, uniform random actions instead (no GPU)."""

    def __init__(self, env, cfg: dict, checkpoint: str | None, num_agents: int, seed: int, adapter=None,
                 deterministic: bool = False):
        source = envs.resolve(env)  # an EnvSource passes through; a name or path is resolved once

        def make(env_cfg):
            return envs.make(source, num_agents, config=source.for_evaluation(env_cfg),
                             num_threads=cfg["vec"]["num_threads"], seed=seed, check_actions=False)
        self.env = make(cfg["env"])
        self.steps = 0
        if checkpoint is None:
            self.infer = RandomActions(self.env, seed)
            self.path, self.meta = None, {}
            self.env.reset()
            return
        self.gpu = get_gpu(adapter, quiet=True)
        attach(self.gpu)  # the tuned kernel variants (from the cache, or timed once)
        path = ckpt.resolve(checkpoint, cfg["base"]["checkpoint_dir"], self.env.name)
        meta = ckpt.read_sidecar(path) if path.exists() else None
        saved = tuple(meta["picture"]) if meta and meta.get("picture") else None
        if saved and saved != tuple(self.env.picture or ()) and PICTURE_KEYS[0] in self.env.config:
            # a run trained with other picture_* settings: show the env the picture its policy saw
            print(f"note: {path.name} was trained on {saved[0]}x{saved[1]}x{saved[2]} pictures (height x width x "
                  f"channels); the env is set to match")
            self.env.close()
            self.env = make({**cfg["env"], **dict(zip(PICTURE_KEYS, saved))})
        hidden = meta["hidden_size"] if meta else cfg["policy"]["hidden_size"]
        layers = meta["num_layers"] if meta else cfg["policy"]["num_layers"]
        self.spec = PolicySpec.for_env(self.env, hidden, layers)
        weights, self.meta = ckpt.load(path, self.spec, env=self.env.name)
        self.path = path
        self.policy = Policy(self.gpu, self.spec, weights)
        self.rollout = Rollout(self.gpu, self.spec, self.env.num_agents, 1)
        self.infer = RolloutStep(self.policy, self.rollout, seed=seed, deterministic=deterministic)
        self.env.reset()

    def step(self):
        env = self.env
        actions = self.infer(0, self.steps, env.observations, env.rewards, env.terminals, env.action_mask)
        env.step(actions)
        self.steps += 1

    def measure(self, episodes: int, max_steps: int = 1_000_000) -> dict:
        """Mean of every logged metric over the first k episodes of each env (k·num_envs ≥ episodes)."""
        env = self.env
        per_env = -(-episodes // env.num_envs)
        taken = np.zeros(env.num_envs, int)
        results, weights = [], []
        env.log()  # start from clean logs
        for _ in range(max_steps):
            self.step()
            counts = env.log_counts()
            for i in np.flatnonzero((counts > 0) & (taken < per_env)):
                result = env.env_log(int(i))
                # an "env" of several agents (a multi-agent env, a server process of many envs) can end
                # several episodes in one step: its log is their mean over n, which counts n times
                n = max(1, int(round(result.get("n", 1))))
                results.append(result)
                weights.append(n)
                taken[i] += n
            if taken.min() >= per_env:
                break
        else:
            raise RuntimeError(f"only {taken.sum()} of {per_env * env.num_envs} episodes finished in {max_steps} steps")
        keys = [k for k in results[0] if k != "n"]
        return {"episodes": int(sum(weights)),
                **{k: float(np.average([r[k] for r in results], weights=weights)) for k in keys}}


class RandomActions:
    """The random policy, called like RolloutStep: each discrete head uniform over the choices its
    action mask allows (all when none is), each continuous head (size 1) N(0, 1)."""

    def __init__(self, env, seed: int):
        self.sizes = np.asarray(env.act_sizes)
        self.rng = np.random.default_rng(seed)

    def __call__(self, _buffer, _step, _obs, _rewards, _terminals, mask):
        n = mask.shape[0]
        out = np.empty((n, len(self.sizes)), np.float32)
        col = 0
        for h, size in enumerate(self.sizes):
            if size == 1:
                out[:, h] = self.rng.standard_normal(n)
            else:
                legal = mask[:, col:col + size].astype(bool)
                legal[~legal.any(axis=1)] = True  # a row with no legal choice: any (as training would fail anyway)
                # the k-th legal choice, k uniform below the row's count
                k = (self.rng.random(n) * legal.sum(axis=1)).astype(np.int64)
                out[:, h] = (np.cumsum(legal, axis=1) <= k[:, None]).sum(axis=1)
            col += size
        return out


def main(argv=None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(prog="python -m trainer.eval", description=__doc__.split("\n")[0])
    ap.add_argument("--env", required=True, help=f"env name ({envs.describe_envs()}), or the path of a C header, JS game or server ini")
    ap.add_argument("checkpoint", nargs="?", default="latest", help="latest (default: the newest under the "
                    "checkpoint folder) or a .bin path")
    ap.add_argument("--checkpoint-dir", "--checkpoint_dir", default=None, metavar="DIR",
                    help="the checkpoint folder `latest` looks in (--base.checkpoint_dir; default: checkpoints)")
    ap.add_argument("--headless", action="store_true", help="no window: print perf over --episodes episodes")
    ap.add_argument("--episodes", type=int, default=1000, help="episodes to measure with --headless (default 1000)")
    ap.add_argument("--agents", type=int, default=1024, help="parallel envs for --headless (default 1024)")
    ap.add_argument("--gif", help="record one episode of env 0 to this GIF file (no display needed)")
    ap.add_argument("--fps", type=float, default=30, help="window/GIF frame rate")
    ap.add_argument("--seed", type=int, default=1, help="seed for the envs and action sampling")
    ap.add_argument("--deterministic", action="store_true",
                    help="no sampling: the most likely legal choice of each discrete head, the mean of each continuous one")
    ap.add_argument("--random", action="store_true",
                    help="uniform random actions instead of a checkpoint (the baseline; with --headless)")
    ap.add_argument("--adapter", default=None, help="GPU adapter name/backend substring")
    ap.epilog = "config flags: --section.key value (--env.KEY, --base.checkpoint_dir, ...; trainer.run --help lists them)"
    flags, argv = config_mod.split_section_flags(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(argv)
    bad = [f"--{k} must be >= 1, got {getattr(args, k)}" for k in ("episodes", "agents") if getattr(args, k) < 1]
    bad += [f"--fps must be > 0, got {args.fps}"] if not args.fps > 0 else []
    if bad:  # one line, like argparse's own usage errors (exit status 2)
        print(f"error: {'; '.join(bad)}", file=sys.stderr)
        return 2
    try:
        source = envs.resolve(args.env)  # once: the config and the env take the source
        flags = config_mod.parse_flags(flags)
        if args.checkpoint_dir is not None:
            flags["base.checkpoint_dir"] = args.checkpoint_dir
        cfg, _ = config_mod.load(source, flags)
        if args.random and not args.headless:
            raise ValueError("--random measures the random policy: use it with --headless")
        if args.headless:
            ev = Evaluator(source, cfg, None if args.random else args.checkpoint, min(args.agents, args.episodes),
                           args.seed, args.adapter, deterministic=args.deterministic)
            t0 = time.perf_counter()
            res = ev.measure(args.episodes)
            dt = time.perf_counter() - t0
            print("random policy (uniform legal actions)" if args.random else
                  f"checkpoint {ev.path} (step {ev.meta.get('global_step', '?')})"
                  + (", deterministic actions" if args.deterministic else ""))
            print(f"{ev.env.name}: " + " ".join(f"{k} {v:.4f}" for k, v in res.items() if k != "episodes")
                  + f" over {res['episodes']} episodes ({ev.env.num_envs} envs × first "
                  f"{res['episodes'] // ev.env.num_envs}) in {dt:.1f} s")
            print(f"perf {res.get('perf', float('nan')):.4f}")
            return 0
        ev = Evaluator(source, cfg, args.checkpoint, 1, args.seed, args.adapter, deterministic=args.deterministic)
        print(f"checkpoint {ev.path} (step {ev.meta.get('global_step', '?')})")
        # a picture env: what the agent sees (its observation picture, 4x); else the env's render
        view = (lambda: ev.env.agent_view(0, 4)) if ev.env.picture else (lambda: ev.env.render(0))
        if args.gif:
            frames = [view()]
            for _ in range(100_000):
                ev.step()
                if ev.env.episode_over(0):  # a whole episode (an Atari game: every life)
                    break
                frames.append(view())
            write_gif(args.gif, frames, fps=args.fps)
            log = ev.env.log()
            print(f"wrote {args.gif}: {len(frames)} frames; " + " ".join(f"{k} {v:.3g}" for k, v in log.items()))
            return 0
        from envs.viewer import Viewer
        frame = view()
        with Viewer(f"puffgpu eval: {ev.env.name}", frame.shape[1], frame.shape[0]) as view:
            while view.show(frame):
                t = time.perf_counter()
                ev.step()
                if ev.env.episode_over(0):
                    log = ev.env.log()
                    print(" ".join(f"{k} {v:.3g}" for k, v in log.items()), flush=True)
                frame = view()
                time.sleep(max(0.0, 1.0 / args.fps - (time.perf_counter() - t)))
    except (config_mod.ConfigError, ckpt.CheckpointError, GPUError, ValueError, RuntimeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
