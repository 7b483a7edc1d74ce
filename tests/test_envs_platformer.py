"""platformer: observation layout, rewards, deaths, timeouts, one-way platforms, and the scripted
policy reaching the flag from every spawn."""

import numpy as np
import pytest

import envs
from golden.check import assert_close

VIEW_W, VIEW_H, CH = 15, 9, 3
WINDOW = VIEW_W * VIEW_H * CH
SOLID, ONEWAY, HAZARD = range(3)
RIGHT, NONE = 2, 0
JUMP, DROP = 1, 2


def tile(obs, dx, dy, channel):
    """Channel of the tile dx, dy from the player's tile, in one agent's observation row."""
    return obs[((dy + 4) * VIEW_W + dx + 7) * CH + channel]


def scalars(obs):
    names = ["cx", "cy", "fx", "fy", "vx", "vy", "on_ground", "time"]
    return dict(zip(names, obs[WINDOW:]))


@pytest.fixture
def one():
    env = envs.make("platformer", 1, num_threads=1)
    env.reset()
    return env


def test_observation_at_spawn(one):
    obs = one.observations[0]
    assert obs.shape == (413,) and set(np.unique(obs[:WINDOW])) <= {0.0, 1.0}
    s = scalars(obs)
    # spawn: column 2 plus up to one tile of jitter, standing on the ground (top at row 15)
    assert 2.4 <= s["cx"] * 100 < 3.4 and s["vx"] == 0 and s["time"] == 0
    assert_close("spawn y in tiles", s["cy"] * 18, 14.55, "env_f32")
    assert_close("spawn y within the tile", s["fy"], 0.55, "env_f32")
    assert s["on_ground"] == 1
    assert tile(obs, 0, 1, SOLID) == 1 and tile(obs, 0, 0, SOLID) == 0  # floor below, air here
    assert all(tile(obs, -tx, 0, SOLID) == 1 for tx in (3, 4))  # the left wall (column 0) and
    # beyond the map edge (solid) are in view: player column 2 or 3
    # rows 15..17 are ground; row 18 (dy 4) is below the map, which counts as hazard
    assert tile(obs, 0, 3, HAZARD) == 0 and tile(obs, 0, 4, HAZARD) == 1


def test_standing_still_times_out(one):
    env = envs.make("platformer", 4, config={"max_ticks": 60}, num_threads=1)
    env.reset()
    for t in range(30):  # frameskip 2: 60 ticks = 30 steps
        env.step(np.zeros((4, 2)))
        assert (env.terminals == (t == 29)).all()
    assert_close("timeout penalty", env.rewards, np.full(4, -0.1), "env_f32")
    log = env.log()
    assert log["timeouts"] == 1 and log["deaths"] == 0 and log["perf"] == 0
    assert log["episode_length"] == 30 and log["score"] == 0
    assert log["episode_return"] == pytest.approx(-0.1)


def test_running_right_without_jumping_dies_in_the_first_pit(one):
    total, t = 0.0, 0
    while True:
        one.step(np.array([[RIGHT, NONE]]))
        total += one.rewards[0]
        t += 1
        if one.terminals[0]:
            break
    log = one.log()
    assert log["deaths"] == 1 and log["timeouts"] == 0 and log["perf"] == 0
    # progress reward for the x reached (about columns 2 -> 12 of 95 minus the spawn), then -0.1
    assert 0.05 < log["score"] < 0.15
    assert_close("summed rewards vs score - 0.1", total, log["score"] - 0.1, "env_f32")
    assert_close("logged episode return", log["episode_return"], total, "env_f32")


def test_scripted_policy_reaches_the_flag_from_every_spawn():
    env = envs.make("platformer", 256, seed=3)
    env.reset()
    spawn_fx = scalars(env.observations[0])["fx"]
    assert len(np.unique(env.observations[:, WINDOW])) > 200, "spawns should be jittered"
    done = np.zeros(256, bool)
    returns = np.zeros(256)
    for _ in range(1000):  # an episode lasts about 320 steps; the time limit is 900
        env.scripted_actions()
        env.step()
        returns += np.where(done, 0, env.rewards)
        done |= env.terminals == 1
        if done.all():
            break
    assert done.all()
    log = env.log()
    assert log["perf"] == 1.0 and log["deaths"] == 0 and log["timeouts"] == 0, log
    assert log["score"] == pytest.approx(1.0)
    assert_close("returns", returns, np.full(256, 2.0), "env_f32")  # progress sums to 1, +1 at the flag
    assert 0 <= spawn_fx < 1


def test_drop_through_a_one_way_platform():
    """Follow the scripted run onto the first one-way platform (over the wide pit), then drop:
    the player falls through it and dies in the pit."""
    env = envs.make("platformer", 1, num_threads=1)
    env.reset()
    for _ in range(400):
        obs = env.observations[0]
        s = scalars(obs)
        if s["on_ground"] and tile(obs, 0, 1, ONEWAY) and not tile(obs, 0, 1, SOLID):
            break
        env.scripted_actions()
        env.step()
        assert not env.terminals[0]
    else:
        pytest.fail("never stood on a one-way platform")
    y0 = s["cy"]
    env.step(np.array([[NONE, NONE]]))
    assert scalars(env.observations[0])["cy"] == y0, "standing on a one-way platform is stable"
    env.step(np.array([[NONE, DROP]]))
    for _ in range(60):
        if env.terminals[0]:
            break
        assert scalars(env.observations[0])["cy"] > y0
        env.step(np.array([[NONE, NONE]]))
    assert env.terminals[0] and env.log()["deaths"] == 1


def test_frameskip_scales_episode_length():
    lengths = {}
    for fs in (1, 3):
        env = envs.make("platformer", 32, config={"frameskip": fs}, seed=1)
        env.reset()
        done = np.zeros(32, bool)
        for _ in range(2000):
            env.scripted_actions()
            env.step()
            done |= env.terminals == 1
            if done.all():
                break
        log = env.log()
        assert log["perf"] == 1.0 and log["n"] == 32
        lengths[fs] = log["episode_length"]
    assert_close("episode length at frameskip 1 vs 3 × frameskip 3", lengths[1], 3 * lengths[3], "frameskip")
