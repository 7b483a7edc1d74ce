"""Curriculum starts for the DDNet bots: episodes begin at places bots have already reached.

The DDNet seed's "adaptive checkpoint respawning": a rolling buffer of recent episodes, each with
the places its bot stood on along the way (with their progress toward the finish); a new episode
starts at the map's spawn with probability 1 − share, otherwise at one of those places, taken from
one of the best episodes of the buffer and never beyond the frontier: the furthest progress an
episode that began at the spawn has reached. So starts move forward only as fast as the bots do from
the real start, and the hard part past the frontier is practised more often than a run from the
spawn alone would.

    c = Curriculum(share=0.8, rng=np.random.default_rng(seed))
    c.record(from_start=True, best=0.12, places=[(0.05, x, y), (0.11, x, y)])
    c.sample()        # None: the spawn; else (x, y, progress)

Places are world positions (1/32 tile) where the bot was alive, unfrozen and on the ground; the env
decides which and how far apart (envs/ddnet/env.py).
"""
from __future__ import annotations

from collections import deque

import numpy as np


class Curriculum:
    def __init__(self, share: float, rng: np.random.Generator, episodes: int = 256, top: float = 0.25):
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"[env] curriculum = {share!r}: the share of curriculum starts must be in [0, 1]")
        self.share = float(share)
        self.rng = rng
        self.top = top
        self.buffer = deque(maxlen=episodes)  # (best progress, places [(progress, x, y)])
        self.frontier = 0.0                   # furthest progress of an episode that began at the spawn

    def record(self, from_start: bool, best: float, places):
        """One finished episode: whether it began at the spawn, its best progress, the places it stood on."""
        if from_start:
            self.frontier = max(self.frontier, float(best))
        if places:
            self.buffer.append((float(best), list(places)))

    def sample(self):
        """Where the next episode begins: None for the spawn, or (x, y, progress) of a place reached before.

        With probability `share`: of the buffer's episodes with a place no further than the frontier,
        one of the best `top` share (uniform), then one of those places, the further the likelier
        (weight = progress)."""
        if self.share == 0.0 or not self.buffer or self.rng.random() >= self.share:
            return None
        eligible = [(best, ok) for best, places in self.buffer
                    if (ok := [p for p in places if 0.0 < p[0] <= self.frontier])]
        if not eligible:
            return None
        eligible.sort(key=lambda e: e[0], reverse=True)
        top = eligible[:max(1, int(round(self.top * len(eligible))))]
        ok = top[self.rng.integers(len(top))][1]
        w = np.array([p[0] for p in ok])
        progress, x, y = ok[self.rng.choice(len(ok), p=w / w.sum())]
        return int(x), int(y), float(progress)
