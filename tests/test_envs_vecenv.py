"""The vecenv contract: layout, determinism, auto-reset and terminal semantics, log aggregation,
input validation, user headers and the build cache."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import envs
from golden.check import tolerance

ROOT = Path(__file__).resolve().parent.parent


def random_actions(env, rng):
    return rng.integers(0, env.act_sizes, size=env.actions.shape).astype(np.float32)


def test_list_envs_and_ini_paths():
    names = envs.list_envs()
    assert {"platformer", "memory", "bandit"} <= set(names)
    for name in names:
        assert envs.env_ini_path(name) == ROOT / "envs" / "ocean" / name / f"{name}.ini"
        ini = envs.read_ini(envs.env_ini_path(name))
        if envs.resolve(name).kind.name == "js":  # a game's own keys are in [js]; its ini needs no [env]
            assert {"vec", "train", "js"} <= set(ini) <= {"base", "vec", "env", "js", "policy", "train"}, name
        else:
            assert {"base", "vec", "env", "train"} <= set(ini) <= {"base", "vec", "env", "policy", "train"}, name


def test_make_shapes_and_views():
    env = envs.make("platformer", 8, num_threads=1)
    assert (env.name, env.obs_size, env.act_sizes, env.num_agents) == ("platformer", 413, (3, 3), 8)
    assert env.obs_dtype == np.float32
    assert env.observations.shape == (8, 413) and env.observations.dtype == np.float32
    assert env.actions.shape == (8, 2) and env.actions.dtype == np.float32
    assert env.rewards.shape == (8,) and env.terminals.shape == (8,)
    assert env.action_mask.shape == (8, 6) and (env.action_mask == 1).all()
    obs = env.observations
    env.reset()
    env.step()
    assert env.observations is obs  # the same memory for the object's life
    with pytest.raises(AttributeError):
        env.observations = np.zeros((8, 413), np.float32)
    env.close()
    env.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        env.step()


@pytest.mark.parametrize("name", ["platformer", "memory", "bandit"])
def test_determinism_same_seed_same_actions(name):
    a = envs.make(name, 32, seed=7, num_threads=1)
    b = envs.make(name, 32, seed=7, num_threads=2)  # thread count must not matter
    c = envs.make(name, 32, seed=8, num_threads=1)
    rng = np.random.default_rng(0)
    a.reset(), b.reset(), c.reset()
    differs = False
    for _ in range(300):
        act = random_actions(a, rng)
        for e in (a, b, c):
            e.step(act)
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        np.testing.assert_array_equal(a.terminals, b.terminals)
        differs |= not np.array_equal(a.observations, c.observations)
    assert differs, "a different seed should give different episodes"
    assert a.log() == b.log()


def test_memory_terminal_and_auto_reset_semantics():
    delay = 3
    env = envs.make("memory", 16, config={"delay": delay}, num_threads=1)
    env.reset()
    obs = env.observations
    cue = obs[:, 2].astype(int)  # cue shown only at t = 0
    assert ((obs[:, 1] + obs[:, 2]) == 1).all() and (obs[:, 3] == 0).all() and (obs[:, 0] == 1).all()
    env.actions[:, 0] = cue  # actions before the answer step are ignored
    for t in range(1, delay + 1):
        env.step()
        assert (env.terminals == 0).all() and (env.rewards == 0).all()
        assert (obs[:, 1:3] == 0).all(), "the cue must not be visible during the delay"
        assert (obs[:, 3] == (t == delay)).all()
    right = np.arange(16) % 2 == 0
    env.actions[:, 0] = np.where(right, cue, 1 - cue)
    env.step()  # the answer step: reward and terminal arrive together with the new episode's obs
    np.testing.assert_array_equal(env.rewards, right.astype(np.float32))
    assert (env.terminals == 1).all()
    assert ((obs[:, 1] + obs[:, 2]) == 1).all() and (obs[:, 3] == 0).all()
    env.step()  # rewards and terminals are cleared before every step
    assert (env.terminals == 0).all() and (env.rewards == 0).all()
    log = env.log()
    assert log == {"perf": 0.5, "score": 0.5, "episode_return": 0.5,
                   "episode_length": delay + 1, "n": 16.0}
    assert env.log() == {}  # cleared by the previous call


def test_memory_needs_memory():
    """A policy that remembers the cue is perfect; one that cannot is at chance."""
    env = envs.make("memory", 256, num_threads=1)
    env.reset()
    remembered = env.observations[:, 2].copy()
    for _ in range(200):
        env.actions[:, 0] = remembered
        env.step()
        shown = (env.observations[:, 1] + env.observations[:, 2]) > 0
        remembered[shown] = env.observations[shown, 2]
    assert env.log()["perf"] == 1.0
    rng = np.random.default_rng(1)
    for _ in range(200):  # memoryless: the answer-step obs is the same for both cues
        env.actions[:, 0] = rng.integers(0, 2, 256)
        env.step()
    log = env.log()  # a fair coin per episode: perf's standard error is 0.5/√n
    assert abs(log["perf"] - 0.5) < tolerance("sampling") * 0.5 / np.sqrt(log["n"]), log


def test_log_aggregation_sums_over_envs_and_divides_by_total_n():
    env = envs.make("bandit", 10, num_threads=2)
    env.reset()
    steps = [np.arange(10) < 3, np.arange(10) < 8]  # agents fully right in step 1 and 2
    for right in steps:
        ctx = env.observations.argmax(1)
        env.actions[:, 0] = np.where(right, ctx, (ctx + 1) % 4)
        env.actions[:, 1] = np.where(right, ctx % 3, (ctx % 3 + 1) % 3)
        env.step()
    log = env.log()
    assert log["n"] == 20.0
    assert log["perf"] == pytest.approx((3 + 8) / 20)
    assert log["score"] == pytest.approx((3 + 8) / 20)
    assert log["episode_length"] == 1.0
    assert env.log() == {}
    env.step()
    assert env.log()["n"] == 10.0


def test_per_env_log_counts_and_reads():
    """log_counts/env_log let an evaluator take each env's first episode (trainer.eval)."""
    env = envs.make("bandit", 6, num_threads=1)
    env.reset()
    ctx = env.observations.argmax(1)
    env.actions[:, 0] = np.where(np.arange(6) < 2, ctx, (ctx + 1) % 4)  # envs 0, 1 right on head 0
    env.actions[:, 1] = ctx % 3
    env.step()
    assert env.log_counts().tolist() == [1.0] * 6
    one = env.env_log(0)
    assert one["n"] == 1.0 and one["perf"] == 1.0
    assert env.log_counts().tolist() == [0.0] + [1.0] * 5  # only env 0 was read and cleared
    rest = env.log()
    assert rest["n"] == 5.0 and rest["perf"] == pytest.approx(1 / 5)
    with pytest.raises(IndexError):
        env.env_log(6)


def test_bandit_optimal_policy_is_perfect():
    env = envs.make("bandit", 64, num_threads=1)
    env.reset()
    for _ in range(10):
        ctx = env.observations.argmax(1)
        env.step(np.stack([ctx, ctx % 3], 1))
        assert (env.rewards == 1).all() and (env.terminals == 1).all()
    assert env.log()["perf"] == 1.0


def test_render_shapes():
    for name in ["platformer", "memory", "bandit"]:
        env = envs.make(name, 3, num_threads=1)
        env.reset()
        img = env.render(2)
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3 and img.size > 0
        with pytest.raises(IndexError):
            env.render(3)


# ---- input validation ----

def test_unknown_env_name_lists_valid_ones():
    with pytest.raises(ValueError, match=r"unknown env 'nope'.*bandit, .*memory, .*platformer"):
        envs.make("nope", 4)


def test_unknown_config_key_lists_valid_ones():
    with pytest.raises(ValueError, match=r"unknown \[env\] key 'frame_skip'.*frameskip.*max_ticks"):
        envs.make("platformer", 4, config={"frame_skip": 4})


def test_config_values_must_be_numbers():
    with pytest.raises(ValueError, match="finite number"):
        envs.make("platformer", 4, config={"frameskip": "fast"})
    env = envs.make("platformer", 4, config={"frameskip": "4", "fail_penalty": 0.5})
    assert env.config["frameskip"] == 4 and env.config["fail_penalty"] == 0.5


def test_default_env_keys_are_accepted():
    env = envs.make("bandit", 2, config={"num_agents": 1, "dr": 0, "num_bots": 0})
    assert env.num_agents == 2


@pytest.mark.parametrize("total_agents", [0, -1, 2.5])
def test_bad_total_agents(total_agents):
    with pytest.raises(ValueError, match="total_agents"):
        envs.make("bandit", total_agents)


@pytest.mark.parametrize("value,head", [(3.0, 0), (-1.0, 1), (0.5, 0), (np.nan, 1), (np.inf, 0)])
def test_out_of_range_actions_raise(value, head):
    env = envs.make("platformer", 4, num_threads=1)
    env.reset()
    env.actions[2, head] = value
    with pytest.raises(ValueError, match=rf"agent 2, head {head} is .*integer in \[0, 2\]"):
        env.step()


def test_wrong_action_shape_raises():
    env = envs.make("platformer", 4, num_threads=1)
    env.reset()
    with pytest.raises(ValueError, match=r"shape \(4, 2\)"):
        env.step(np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"shape \(4, 2\)"):
        env.step(np.zeros(8, np.float32))


def test_unchecked_garbage_actions_are_safe():
    """With validation off, C treats garbage as action 0 instead of reading out of bounds."""
    env = envs.make("platformer", 64, check_actions=False, num_threads=1)
    env.reset()
    junk = np.array([np.nan, np.inf, -np.inf, -1, 3, 1e30, -1e30, 2.5], np.float32)
    rng = np.random.default_rng(0)
    for _ in range(200):
        env.step(rng.choice(junk, size=env.actions.shape))
    assert np.isfinite(env.observations).all()


# ---- user headers and the build cache ----

COUNTER_H = textwrap.dedent("""\
    typedef unsigned char obs_t;
    #include "pufferenv.h"
    #define OBS_SIZE 2
    #define NUM_ATNS 1
    #define ACT_SIZES {2}
    struct Log { float perf; float score; float n; };
    struct Env { Log log; Agent agents[2]; int num_agents; unsigned int rng; int tag;
                 int boundary_reached; int length; int t; };
    void puf_init(Env* env, Dict* kwargs) {
        env->num_agents = 2;
        env->length = dict_get(kwargs, "length");
        READ_EXTRA
    }
    void puf_reset(Env* env) {
        env->t = 0;
        for (int a = 0; a < 2; a++) { env->agents[a].observations[0] = 0; env->agents[a].observations[1] = a; }
    }
    void puf_step(Env* env) {
        env->t++;
        for (int a = 0; a < 2; a++) {
            env->agents[a].observations[0] = (unsigned char)env->t;
            env->agents[a].rewards[0] = env->agents[a].actions[0];
        }
        if (env->t == env->length) {
            for (int a = 0; a < 2; a++) env->agents[a].terminals[0] = 1;
            env->log.perf += 1; env->log.score += env->t; env->log.n += 1;
            puf_reset(env);
        }
    }
    void puf_render(Env* env) { (void)env; }
    void puf_close(Env* env) { (void)env; }
    void puf_log(Log* log, Dict* out) { dict_set(out, "perf", log->perf); dict_set(out, "score", log->score); }
""")


def write_counter(folder, extra=""):
    folder.mkdir(parents=True, exist_ok=True)
    header = folder / "counter.h"
    header.write_text(COUNTER_H.replace("READ_EXTRA", extra))
    (folder / "counter.ini").write_text("[base]\n[vec]\n[env]\nlength = 3\n[train]\n")
    return header


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PUFFGPU_ENV_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_user_header_with_two_agents_per_env(tmp_path, cache):
    header = write_counter(tmp_path / "counter")
    env = envs.make(str(header), 5, num_threads=2)  # 3 envs of 2 agents: N rounds up to 6
    assert (env.name, env.num_agents, env.num_envs, env.obs_dtype) == ("counter", 6, 3, np.uint8)
    env.reset()
    np.testing.assert_array_equal(env.observations[:, 1], [0, 1] * 3)  # rows: env, then agent
    env.actions[:, 0] = [0, 1, 1, 0, 1, 1]
    for t in range(1, 4):
        env.step()
        np.testing.assert_array_equal(env.rewards, env.actions[:, 0])
        assert (env.terminals == (t == 3)).all()
    assert env.log() == {"perf": 1.0, "score": 3.0, "n": 3.0}
    with pytest.raises(NotImplementedError, match="drew nothing"):
        env.render(0)
    assert list(cache.glob("_puf_counter_*")), "the module should be cached in PUFFGPU_ENV_CACHE"


def test_header_reading_a_key_missing_from_the_ini(tmp_path, cache):
    header = write_counter(tmp_path / "counter", 'dict_get(kwargs, "speed");')
    with pytest.raises(ValueError, match=r"reads \[env\] key 'speed'.*add it"):
        envs.make(str(header), 2)


def test_header_compile_error_shows_compiler_output(tmp_path, cache):
    header = write_counter(tmp_path / "counter", "this is not C;")
    with pytest.raises(RuntimeError, match=r"compiling env header .*counter\.h failed(.|\n)*error"):
        envs.make(str(header), 2)


@pytest.mark.slow
def test_concurrent_builds_of_one_header(tmp_path, cache):
    """Two processes building the same new module at once both load a complete file."""
    header = write_counter(tmp_path / "counter")
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import envs; "
            f"e = envs.make({str(header)!r}, 4); e.reset(); e.step(); print(e.num_agents)")
    env = dict(os.environ, PUFFGPU_ENV_CACHE=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "4"
    assert len(list(cache.glob("_puf_counter_*.so"))) == 1
    assert not [p for p in cache.iterdir() if p.is_dir()], "temp build folders must be removed"


# ---- PufferLib 5.0 contract details ----

@pytest.mark.parametrize("name", ["platformer", "memory", "bandit"])
def test_envs_clear_their_own_rewards_and_terminals(name):
    """PufferLib's CPU evaluator does not zero rewards/terminals between steps: an env left with
    a stale terminal = 1 would wipe the recurrent state every step. With host clearing off and
    garbage written before every step, the results equal a normal run's."""
    a = envs.make(name, 16, seed=3, num_threads=1)
    b = envs.make(name, 16, seed=3, num_threads=1)
    b.set_clear_outputs(False)
    a.reset(), b.reset()
    rng = np.random.default_rng(0)
    for _ in range(200):
        act = random_actions(a, rng)
        b.rewards[:] = 7.0
        b.terminals[:] = 1.0
        a.step(act), b.step(act)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        np.testing.assert_array_equal(a.terminals, b.terminals)
        np.testing.assert_array_equal(a.observations, b.observations)
    assert a.log() == b.log()


def test_old_style_header_errors_name_the_fix(tmp_path, cache):
    """A 4.x-style header (anonymous typedefs, dict_get(..)->value) fails at build time with the
    file and line and what to change, not a SIGSEGV at run time."""
    header = tmp_path / "old" / "old.h"
    header.parent.mkdir()
    header.write_text(COUNTER_H.replace("struct Log { float perf; float score; float n; };",
                                        "typedef struct { float perf; float score; float n; } Log;")
                      .replace('dict_get(kwargs, "length");', 'dict_get(kwargs, "length")->value;')
                      .replace("READ_EXTRA", ""))
    (tmp_path / "old" / "old.ini").write_text("[env]\nlength = 3\n")
    with pytest.raises(RuntimeError) as info:
        envs.make(str(header), 2)
    msg = str(info.value)
    assert f"failed at {header}:6:" in msg  # the first error, not the last
    assert "define the named structs `struct Log {...};`" in msg
    assert "dict_get returns the value as a double" in msg


def test_string_env_keys_reach_dict_get_str(tmp_path, cache):
    header = write_counter(tmp_path / "counter", 'env->length = (int)strlen(dict_get_str(kwargs, "name"))'
                                                 ' + (int)dict_get(kwargs, "bonus") - 4 + (int)dict_get(kwargs, "on");')
    (tmp_path / "counter" / "counter.ini").write_text(
        "[env]\nlength = 3\nname = level_one.txt\nbonus = 4, 9\non = false\n")
    env = envs.make(str(header), 2)  # a comma list reads as its first number, as in PufferLib
    assert env.config["name"] == "level_one.txt" and env.config["on"] == 0
    env.reset()
    for _ in range(13):
        env.step()
    assert env.log()["score"] == 13.0  # episodes of strlen("level_one.txt") = 13 steps


@pytest.mark.slow
def test_cache_follows_headers_included_from_elsewhere(tmp_path, cache):
    """The cache key is every file the compiler read (-MD), not just the header's folder."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "length_bonus.h").write_text("#define LENGTH_BONUS 0\n")
    header = write_counter(tmp_path / "counter", "env->length += LENGTH_BONUS;")
    header.write_text(f'#include "{shared / "length_bonus.h"}"\n' + header.read_text())

    def episode_length():
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import envs\n"
                f"e = envs.make({str(header)!r}, 2); e.reset()\n"
                f"n = 0\nwhile True:\n    e.step(); n += 1\n    if e.terminals[0]: break\nprint(n)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=dict(os.environ, PUFFGPU_ENV_CACHE=str(cache)), timeout=120)
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    assert episode_length() == 3
    (shared / "length_bonus.h").write_text("#define LENGTH_BONUS 2\n")
    assert episode_length() == 5, "editing an included header must rebuild"
    assert len(list(cache.glob("_puf_counter_*.so"))) == 2
    manifest = next(cache.glob("_puf_counter_*.json")).read_text()
    assert str(shared / "length_bonus.h") in manifest and "pufferenv.h" in manifest


def test_cache_location(monkeypatch, tmp_path):
    from envs.build import cache_dir
    monkeypatch.delenv("PUFFGPU_ENV_CACHE", raising=False)
    monkeypatch.setenv("PUFFGPU_CACHE", str(tmp_path / "root"))
    assert cache_dir() == tmp_path / "root" / "envs"
    monkeypatch.delenv("PUFFGPU_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "puffgpu" / "envs"
    monkeypatch.setenv("PUFFGPU_ENV_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"


def test_raylib_call_outside_the_subset_is_named(tmp_path, cache):
    header = write_counter(tmp_path / "counter")
    header.write_text(header.read_text().replace(
        "void puf_render(Env* env) { (void)env; }",
        "void puf_render(Env* env) {\n    (void)env;\n    DrawCube((Vector3){0, 0, 0}, 1, 1, 1, RED);\n}"))
    with pytest.raises(RuntimeError) as info:
        envs.make(str(header), 2)
    msg = str(info.value)
    line = header.read_text().splitlines().index("    DrawCube((Vector3){0, 0, 0}, 1, 1, 1, RED);") + 1
    assert f"failed at {header}:{line}:" in msg
    assert "`DrawCube` is raylib API that puffgpu's software raylib subset (envs/c/raylib.h) does not provide" in msg


def test_function_used_but_never_defined_is_named(tmp_path, cache):
    header = write_counter(tmp_path / "counter")
    header.write_text(header.read_text().replace("void puf_render(Env* env) { (void)env; }\n", "")
                      + "void counter_helper(void);\nvoid puf_render(Env* env) { (void)env; counter_helper(); }\n")
    with pytest.raises(RuntimeError, match=rf"needs `counter_helper`, which nothing defines \({header}:\d+ uses it\)"):
        envs.make(str(header), 2)


def test_upstream_style_render_draws_with_raylib(tmp_path, cache):
    """raylib drawing calls of a 5.0 env land in the canvas: shapes, alpha, text, 2D camera."""
    header = write_counter(tmp_path / "counter")
    header.write_text(header.read_text().replace("void puf_render(Env* env) { (void)env; }", """
void puf_render(Env* env) {
    (void)env;
    if (!IsWindowReady()) InitWindow(40, 30, "t");
    BeginDrawing();
    ClearBackground(BLACK);
    DrawRectangle(0, 0, 10, 10, RED);
    DrawRectangle(5, 5, 10, 10, Fade(BLUE, 0.5f));
    DrawCircleV((Vector2){30, 10}, 5, GREEN);
    Camera2D cam = {{0, 0}, {0, 0}, 0, 2};
    BeginMode2D(cam);
    DrawRectangleRec((Rectangle){1, 10, 2, 2}, WHITE);
    EndMode2D();
    DrawText(TextFormat("%d", 7), 20, 20, 10, YELLOW);
    EndDrawing();
    puf_web_vsync();
}"""))
    env = envs.make(str(header), 2)
    env.reset()
    img = env.render(0)
    assert img.shape == (30, 40, 3)
    assert tuple(img[2, 2]) == (230, 41, 55)          # RED
    assert tuple(img[7, 7]) == (115, 81, 148)         # RED under BLUE at alpha 0.5 (127/255)
    assert tuple(img[12, 12]) == (0, 60, 120)         # BLUE at 0.5 over black
    assert tuple(img[10, 30]) == (0, 228, 48) and tuple(img[10, 24]) == (0, 0, 0)  # circle r=5
    assert (img[20:24, 2:6] == 255).all() and img[19, 2].sum() == 0  # camera zoom 2: (1,10) 2x2 -> (2,20) 4x4
    seven = (img[20:25, 20:23] == (253, 249, 0)).all(-1)  # '7' in the 3x5 font
    assert seven.tolist() == [[True, True, True]] + [[False, False, True]] * 2 + [[False, True, False]] * 2
