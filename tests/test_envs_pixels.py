"""Picture envs: the declaration (PICTURE_* macros, [env] picture_* keys, their errors), the pixel
platformer (the platformer's game exactly, drawn exactly), breakout (its picture and its scripted
policy), thread independence, and what envs.play shows of them."""

import hashlib
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import envs
from envs.errors import EnvBuildError

ROOT = Path(__file__).resolve().parent.parent
PIXEL_ENVS = ["pixel_platformer", "pixel_platformer_small", "breakout"]
# the hand-checked frames of the small env are at 48x48 gray (its ini trains at 36x36)
SMALL48 = {"picture_height": 48, "picture_width": 48}

# pixel_platformer's materials: RGB and the gray level of each (its header's table)
SKY, SOLID, VOID, PLAYER = (92, 148, 252), (136, 84, 40), (0, 0, 0), (230, 30, 30)
GRAY = {"sky": 170, "solid": 70, "oneway": 210, "spike": 255, "flag": 120, "void": 0, "player": 35}
RGB = {SKY, SOLID, VOID, PLAYER, (240, 200, 80), (255, 255, 255), (40, 220, 40)}


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def picture(env, i=0):
    h, w, c = env.picture
    return env.observations[i, env.obs_size - h * w * c:].reshape(h, w, c)


# ---- the declaration ----

def test_builtin_pictures():
    cases = {"pixel_platformer": (64, 64, 3), "pixel_platformer_small": (36, 36, 1), "breakout": (64, 64, 3)}
    for name, pic in cases.items():
        env = envs.make(name, 2, num_threads=1)
        assert (env.picture, env.obs_dtype, env.obs_size) == (pic, np.uint8, int(np.prod(pic))), name
        assert "picture=" in repr(env)
    assert envs.make("platformer", 1, num_threads=1).picture is None
    with pytest.raises(ValueError, match="declares no picture"):
        envs.make("platformer", 1, num_threads=1).agent_view(0)


def test_picture_keys_size_the_row():
    """pixel_platformer draws at the size its [env] keys say; the row follows (PUF_OBS_SIZE)."""
    env = envs.make("pixel_platformer", 3, config={"picture_height": 36, "picture_width": 40,
                                                   "picture_channels": 1}, num_threads=1)
    assert env.picture == (36, 40, 1) and env.obs_size == 36 * 40 == env.observations.shape[1]
    env.reset()
    assert set(np.unique(env.observations)) <= set(GRAY.values())
    assert (env.observations == GRAY["player"]).sum(axis=1).min() >= 2  # still visible at 2.5 px a tile
    with pytest.raises(ValueError, match="PUF_OBS_SIZE.*rejected the \\[env\\] keys"):
        envs.make("pixel_platformer", 1, config={"picture_channels": 2}, num_threads=1)
    with pytest.raises(ValueError, match="PUF_OBS_SIZE"):
        envs.make("pixel_platformer", 1, config={"picture_width": 0}, num_threads=1)


TINY_H = textwrap.dedent("""\
    typedef unsigned char obs_t;
    #include "pufferenv.h"
    MACROS
    #define OBS_SIZE 8
    #define NUM_ATNS 1
    #define ACT_SIZES {2}
    struct Log { float perf; float score; float n; };
    struct Env { Log log; Agent agents[1]; int num_agents; unsigned int rng; int tag;
                 int boundary_reached; int t; };
    void puf_init(Env* env, Dict* kwargs) { (void)kwargs; env->num_agents = 1; }
    static void tiny_obs(Env* env) {
        for (int i = 0; i < OBS_SIZE; i++) env->agents[0].observations[i] = (unsigned char)(10 * i + env->t);
    }
    void puf_reset(Env* env) { env->t = 0; tiny_obs(env); }
    void puf_step(Env* env) { env->t++; env->agents[0].rewards[0] = 0; env->agents[0].terminals[0] = 0; tiny_obs(env); }
    void puf_render(Env* env) { (void)env; }
    void puf_close(Env* env) { (void)env; }
    void puf_log(Log* log, Dict* out) { dict_set(out, "perf", log->perf); }
""")


def write_tiny(folder, macros, env_keys=""):
    folder.mkdir(parents=True, exist_ok=True)
    header = folder / "tiny.h"
    header.write_text(TINY_H.replace("MACROS", macros))
    (folder / "tiny.ini").write_text(f"[base]\n[vec]\n[env]\n{env_keys}\n[train]\n")
    return header


def test_picture_macros_and_their_errors(tmp_path):
    macros = "#define PICTURE_HEIGHT 2\n#define PICTURE_WIDTH 3\n#define PICTURE_CHANNELS 1"
    header = write_tiny(tmp_path / "m", macros)
    env = envs.make(str(header), 1, num_threads=1)
    assert env.picture == (2, 3, 1)  # the last 6 of 8 values; 2 features before it
    env.reset()
    env.step()
    np.testing.assert_array_equal(picture(env)[..., 0], [[21, 31, 41], [51, 61, 71]])
    view = env.agent_view(0, scale=2)
    assert view.shape == (4, 6, 3) and (view[2:4, 4:6] == 71).all()  # gray into R, G, B; 2x2 blocks
    # keys that agree with the macros are fine; keys that do not are an error naming both
    (tmp_path / "m" / "tiny.ini").write_text("[env]\npicture_height = 2\npicture_width = 3\npicture_channels = 1\n")
    assert envs.make(str(header), 1, num_threads=1).picture == (2, 3, 1)
    (tmp_path / "m" / "tiny.ini").write_text("[env]\npicture_height = 3\npicture_width = 2\npicture_channels = 1\n")
    with pytest.raises(ValueError, match=r"tiny\.h declares a 2x3x1 picture.*says 3x2x1"):
        envs.make(str(header), 1, num_threads=1)
    # a picture larger than the row
    big = write_tiny(tmp_path / "big", macros.replace("WIDTH 3", "WIDTH 5"))
    with pytest.raises(ValueError, match=r"tiny\.h \(PICTURE_\* macros\): a 2x5x1 picture is 10 values, more than the 8"):
        envs.make(str(big), 1, num_threads=1)
    # two of the three macros: the build stops
    half = write_tiny(tmp_path / "half", "#define PICTURE_HEIGHT 2\n#define PICTURE_WIDTH 3")
    with pytest.raises(EnvBuildError) as err:
        envs.make(str(half), 1, num_threads=1)
    assert "all three of PICTURE_WIDTH, PICTURE_HEIGHT and PICTURE_CHANNELS" in str(err.value) + err.value.stderr


def test_picture_keys_and_their_errors(tmp_path):
    header = write_tiny(tmp_path / "k", "", "picture_height = 2\npicture_width = 2\npicture_channels = 2")
    ini = tmp_path / "k" / "tiny.ini"
    env = envs.make(str(header), 1, num_threads=1)
    assert env.picture == (2, 2, 2)
    env.reset()
    np.testing.assert_array_equal(picture(env)[1, 1], [60, 70])
    assert env.agent_view(0).shape == (2, 2, 3)  # two channels: the first, as gray
    cases = [({"picture_height": 3, "picture_width": 3, "picture_channels": 1}, "9 values, more than the 8"),
             ({"picture_channels": 0}, "each must be >= 1"),
             ({"picture_width": 1.5}, "must be whole numbers")]
    for config, message in cases:
        with pytest.raises(ValueError, match=message) as err:
            envs.make(str(header), 1, config=config, num_threads=1)
        assert str(ini) in str(err.value)
    ini.write_text("[env]\npicture_height = 2\npicture_width = 2\n")
    with pytest.raises(ValueError, match=r"tiny\.ini: \[env\] declares a picture with picture_height, picture_width "
                                         r"but lacks picture_channels"):
        envs.make(str(header), 1, num_threads=1)


# ---- the pixel platformer: the platformer's game ----

@pytest.mark.parametrize("name", ["pixel_platformer", "pixel_platformer_small"])
def test_pixel_platformer_plays_the_platformers_game(name):
    """Same seed, same actions: the same rewards, terminals and logs, step for step (the scripted
    route to the flag for half the agents, random actions, deaths and timeouts for the rest)."""
    n = 32
    vec = envs.make("platformer", n, num_threads=1, seed=11)
    pix = envs.make(name, n, num_threads=2, seed=11)
    vec.reset()
    pix.reset()
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(700):
        vec.scripted_actions()
        actions = vec.actions.copy()
        actions[n // 2:] = rng.integers(0, 3, size=(n - n // 2, 2))
        vec.step(actions)
        pix.step(actions)
        np.testing.assert_array_equal(pix.rewards, vec.rewards, err_msg=f"step {t}")
        np.testing.assert_array_equal(pix.terminals, vec.terminals, err_msg=f"step {t}")
        ended += int(vec.terminals.sum())
    assert ended > n
    logs = vec.log(), pix.log()
    assert logs[0] == logs[1] and 0 < logs[0]["perf"] < 1 and logs[0]["deaths"] > 0


@pytest.mark.parametrize("config", [{}, {"picture_height": 48, "picture_width": 48, "picture_channels": 1},
                                    {"picture_height": 36, "picture_width": 36, "picture_channels": 1}])
def test_the_picture_alone_solves_the_level(config):
    """The scripted policy on the picture (PUF_SCRIPTED_ENV_POLICY: it needs the configured size)
    reaches the flag from every spawn, down to the smallest picture the trainer takes."""
    n = 128
    env = envs.make("pixel_platformer", n, config=config, num_threads=2, seed=3)
    assert env.has_scripted
    env.reset()
    done = np.zeros(n, bool)
    for _ in range(1000):
        env.scripted_actions()
        env.step()
        done |= env.terminals == 1
        if done.all():
            break
    log = env.log()
    assert done.all() and log["perf"] == 1.0 and log["deaths"] == 0, log


def test_pixel_platformer_frames_by_hand():
    """At the spawn the camera sits on rows 4..19 (a tile is 4 px at 64x64, 3 px at 48x48) and the
    player's left edge 4.5 tiles from the left: its 0.8 x 0.9 box from y 14.1 covers exactly these
    pixel centers."""
    env = envs.make("pixel_platformer", 1, num_threads=1)
    env.observations[:] = 7  # no material has this value: every pixel must be written
    env.reset()
    pic = picture(env)
    assert {tuple(p) for p in pic.reshape(-1, 3)} <= RGB
    player = (pic == PLAYER).all(-1)
    assert player[40:44, 18:21].all() and player.sum() == 12
    assert (pic[44, 16:24] == SOLID).all()  # the ground (row 15) under the player's feet
    assert (pic[56:, :] == VOID).all()      # rows 18-19: below the map, the last row included
    assert (pic[:40, 20] == SKY).all()      # open sky above the player
    assert (pic[:44, 0] == SOLID).all()     # beyond the map's left edge: wall
    assert (pic[44:56, 63] == SOLID).all()  # the last column: the ground past the first pit

    small = envs.make("pixel_platformer_small", 1, num_threads=1, config=SMALL48)
    small.observations[:] = 7
    small.reset()
    gray = picture(small)[..., 0]
    assert set(np.unique(gray)) <= set(GRAY.values())
    assert (gray[30:33, 13:16] == GRAY["player"]).all() and (gray == GRAY["player"]).sum() == 9
    assert (gray[42:, :] == GRAY["void"]).all() and (gray[33, 10:20] == GRAY["solid"]).all()


def test_pixel_platformer_grayscale_is_the_rgb_materials():
    """The 48x48 gray picture and a 48x48 RGB one of the same state show the same materials."""
    kw = {"picture_height": 48, "picture_width": 48}
    rgb = envs.make("pixel_platformer", 4, config={**kw, "picture_channels": 3}, num_threads=1, seed=2)
    gray = envs.make("pixel_platformer", 4, config={**kw, "picture_channels": 1}, num_threads=1, seed=2)
    colors = {SKY: 170, SOLID: 70, (240, 200, 80): 210, (255, 255, 255): 255, (40, 220, 40): 120, VOID: 0, PLAYER: 35}
    lut = np.zeros(1 << 24, np.int16) - 1
    for (r, g, b), v in colors.items():
        lut[(r << 16) | (g << 8) | b] = v
    rgb.reset()
    gray.reset()
    rng = np.random.default_rng(1)
    for t in range(200):
        a = np.stack([np.full(4, 2), rng.integers(0, 2, 4)], 1)  # run right, jump at random
        rgb.step(a)
        gray.step(a)
        p = rgb.observations.reshape(4, 48, 48, 3).astype(np.int64)
        np.testing.assert_array_equal(lut[(p[..., 0] << 16) | (p[..., 1] << 8) | p[..., 2]],
                                      gray.observations.reshape(4, 48, 48), err_msg=f"step {t}")


# Frame hashes along the platformer's scripted route (seed 7, 4 agents): the reset frames are exact
# everywhere (integer drawing of an exactly known spawn); later ones also depend on the float
# physics, which a compiler may contract into fused multiply-adds on other CPUs.
HASHES = {
    "pixel_platformer": {0: "3ef9ee6497b7c12c", 50: "03b59ed3e4625123", 150: "d1f90cffdfef6a65"},
    "pixel_platformer_small": {0: "4a5015fc36969708", 50: "a5166aa0afc775f1", 150: "075c46edc26b43ea"},  # at 48x48
}
HASH_CONFIG = {"pixel_platformer": {}, "pixel_platformer_small": SMALL48}


@pytest.mark.parametrize("name", sorted(HASHES))
def test_pixel_platformer_frame_hashes(name):
    vec = envs.make("platformer", 4, num_threads=1, seed=7)
    pix = envs.make(name, 4, num_threads=1, seed=7, config=HASH_CONFIG[name])
    vec.reset()
    pix.reset()
    got = {0: sha(pix.observations)}
    for t in range(1, 151):
        vec.scripted_actions()
        pix.step(vec.actions)
        vec.step()
        if t in HASHES[name]:
            got[t] = sha(pix.observations)
    if platform.machine().lower() not in ("x86_64", "amd64"):
        got = {0: got[0]}
    assert got == {t: HASHES[name][t] for t in got}


@pytest.mark.parametrize("name", PIXEL_ENVS)
def test_frames_do_not_depend_on_threads(name):
    runs = []
    for threads in (1, 2):
        env = envs.make(name, 24, num_threads=threads, seed=3)
        assert env.num_threads == threads
        env.reset()
        rng = np.random.default_rng(5)
        digest = hashlib.sha256(env.observations.tobytes())
        for _ in range(120):
            env.step(rng.integers(0, env.act_sizes, size=env.actions.shape))
            digest.update(env.observations.tobytes())
            digest.update(env.rewards.tobytes())
            digest.update(env.terminals.tobytes())
        runs.append(digest.hexdigest())
    assert runs[0] == runs[1]


# ---- breakout ----

WALL, PADDLE, BALL = (142, 142, 142), (200, 72, 200), (255, 255, 255)
BRICK_ROWS = [(220, 50, 50), (240, 140, 40), (230, 210, 60), (60, 190, 70), (60, 120, 230), (160, 80, 210)]


def test_breakout_picture_by_hand():
    env = envs.make("breakout", 2, num_threads=1, seed=4)
    env.observations[:] = 7
    env.reset()
    pic = picture(env)
    assert (pic[:2, :] == WALL).all() and (pic[:, :2] == WALL).all() and (pic[:, 62:] == WALL).all()
    assert (pic[63, 2:62] == 0).all() and (pic[2:8, 2:62] == 0).all()  # open bottom; space above the wall
    for r, color in enumerate(BRICK_ROWS):  # 6 rows of 10 bricks, 6x3 cells drawn 5x2
        y = 8 + 3 * r
        for c in range(10):
            x = 2 + 6 * c
            assert (pic[y:y + 2, x:x + 5] == color).all() and (pic[y + 2, x:x + 6] == 0).all()
            assert (pic[y:y + 3, x + 5] == 0).all()
    cols = np.flatnonzero((pic[58] == PADDLE).all(-1))
    assert len(cols) == 10 and (np.diff(cols) == 1).all() and (pic[59, cols] == PADDLE).all()
    ball = np.argwhere((pic == BALL).all(-1))  # held on the paddle's middle
    assert [tuple(p) for p in ball] == [(56, cols[4]), (56, cols[5]), (57, cols[4]), (57, cols[5])]
    env = envs.make("breakout", 4, num_threads=1, seed=7)
    env.reset()
    got = [sha(env.observations)]
    for t in range(1, 301):
        env.scripted_actions()
        env.step()
        if t in (100, 300):
            got.append(sha(env.observations))
    assert got == ["cade65ccde5ece5a", "c36efafbdf2457fb", "4f1a6fef861232f4"]  # integer physics: exact everywhere


def test_breakout_scripted_policy_clears_the_wall_and_random_does_not():
    n = 16
    env = envs.make("breakout", n, num_threads=2, seed=1)
    env.reset()
    returns, done = np.zeros(n), np.zeros(n, bool)
    for _ in range(4000):
        env.scripted_actions()
        env.step()
        returns += np.where(done, 0, env.rewards)
        done |= env.terminals == 1
        if done.all():
            break
    assert done.all()
    log = env.log()
    assert log["perf"] == 1.0 and log["score"] == 60 and log["cleared"] == 1 and log["lives_lost"] == 0, log
    np.testing.assert_allclose(returns, 1.0, atol=1e-5)  # 60 bricks x 1/60
    rand = envs.make("breakout", n, num_threads=2, seed=1)
    rand.reset()
    rng = np.random.default_rng(0)
    for _ in range(1500):
        rand.step(rng.integers(0, 8, size=(n, 1)))
    log = rand.log()
    assert log["n"] >= n and log["perf"] < 0.3 and log["lives_lost"] == 3 and log["cleared"] == 0
    assert log["episode_return"] == pytest.approx(log["score"] / 60 - 0.3, abs=1e-5)


def test_breakout_ignores_garbage_actions():
    env = envs.make("breakout", 8, num_threads=1, check_actions=False)
    env.reset()
    junk = np.array([np.nan, np.inf, -np.inf, -1, 8, 1e30, 2.5], np.float32)
    rng = np.random.default_rng(0)
    for _ in range(300):
        env.step(rng.choice(junk, size=env.actions.shape))
    assert np.isfinite(env.rewards).all()


# ---- tools ----

def test_new_envs_are_discovered():
    """checks/sanitize_envs.sh and tests/test_envs_sanitize.py find envs by folder
    (envs/<name>/<name>.h), so the picture envs are sanitized with the rest."""
    assert set(PIXEL_ENVS) <= set(envs.list_envs())
    script = (ROOT / "checks" / "sanitize_envs.sh").read_text(encoding="utf-8")
    assert 'for d in "$root"/envs/ocean/*/' in script


def test_play_gif_shows_the_agents_picture(tmp_path):
    from PIL import Image
    out = tmp_path / "b.gif"
    res = subprocess.run([sys.executable, "-m", "envs.play", "breakout", "--scripted", "--gif", str(out),
                          "--max-steps", "20"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    im = Image.open(out)
    assert im.size == (256, 256) and im.n_frames == 21
    frame = np.asarray(im.convert("RGB"))
    np.testing.assert_array_equal(frame[::4, ::4][:8, :8], np.full((8, 8, 3), 0) + np.array(
        [[WALL if y < 2 or x < 2 else (0, 0, 0) for x in range(8)] for y in range(8)]))
    out = tmp_path / "p.png"
    res = subprocess.run([sys.executable, "-m", "envs.play", "pixel_platformer_small", "--scripted", "--png", str(out),
                          "--view-scale", "2", "--set", "picture_height=48", "--set", "picture_width=48"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    frame = np.asarray(Image.open(out).convert("RGB"))
    assert frame.shape == (96, 96, 3) and (frame[60:62, 26:32] == 35).all()  # the player, gray, 2x
