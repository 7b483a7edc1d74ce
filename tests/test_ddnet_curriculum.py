"""The DDNet curriculum's sampling rules (envs/ddnet/curriculum.py), without servers: the share of
spawn starts, the frontier cap, the best episodes, the weight toward the furthest places."""
import numpy as np
import pytest

from envs.ddnet.curriculum import Curriculum


def places(lo, hi, n=10):
    return [(p, int(1000 * p), 7) for p in np.linspace(lo, hi, n)]


def test_share_zero_or_empty_buffer_starts_at_the_spawn():
    c = Curriculum(0.0, np.random.default_rng(0))
    c.record(True, 0.5, places(0.05, 0.5))
    assert all(c.sample() is None for _ in range(100))
    c = Curriculum(1.0, np.random.default_rng(0))
    assert c.sample() is None  # nothing recorded yet


def test_the_spawn_share_is_one_minus_share():
    c = Curriculum(0.8, np.random.default_rng(1))
    c.record(True, 0.5, places(0.05, 0.5))
    n = 20_000
    spawn = sum(c.sample() is None for _ in range(n)) / n
    assert abs(spawn - 0.2) < 0.015, spawn


def test_never_beyond_the_frontier_from_the_spawn():
    c = Curriculum(1.0, np.random.default_rng(2))
    c.record(True, 0.2, places(0.01, 0.2))
    c.record(False, 0.9, places(0.3, 0.9))   # a curriculum episode got further: not a frontier
    assert c.frontier == pytest.approx(0.2)
    got = [c.sample() for _ in range(2000)]
    assert all(g is None or g[2] <= 0.2 for g in got)
    assert any(g is not None for g in got)
    c.record(True, 0.6, places(0.01, 0.6))   # now the spawn's frontier is 0.6
    got = [c.sample() for _ in range(2000)]
    assert max(g[2] for g in got if g is not None) > 0.5
    assert all(g is None or g[2] <= 0.6 for g in got)


def test_starts_come_from_the_best_episodes_and_lean_forward():
    c = Curriculum(1.0, np.random.default_rng(3), episodes=8, top=0.25)
    c.record(True, 1.0, [(0.95, 1, 1)])                        # sets the frontier only
    for k in range(6):                                        # six poor episodes...
        c.record(False, 0.1, [(0.05 + 0.01 * k, 100 + k, 0)])
    c.record(False, 0.8, [(0.2, 200, 0), (0.8, 800, 0)])      # ...and two good ones
    got = [c.sample() for _ in range(4000)]
    xs = np.array([g[0] for g in got])
    assert set(np.unique(xs)) <= {1, 200, 800}                # only the top quarter: 2 of 8 episodes
    # within an episode, weight = progress: 0.8 against 0.2
    assert abs((xs == 800).sum() / (xs != 1).sum() - 0.8) < 0.03


def test_the_buffer_rolls():
    c = Curriculum(1.0, np.random.default_rng(4), episodes=4)
    c.record(True, 1.0, [])
    c.record(False, 0.9, [(0.9, 900, 0)])
    for _ in range(4):
        c.record(False, 0.1, [(0.1, 100, 0)])
    assert {c.sample()[0] for _ in range(200)} == {100}     # the good episode rolled out


def test_bad_share_is_a_clear_error():
    with pytest.raises(ValueError, match=r"curriculum = 1.5: the share of curriculum starts must be in \[0, 1\]"):
        Curriculum(1.5, np.random.default_rng(0))
