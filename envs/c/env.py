"""Python side of the vecenv: many copies of one C env header stepped on OpenMP threads.

    import envs
    env = envs.make("platformer", total_agents=1024)      # or make("path/to/my_env.h", ...)
    env.reset()
    env.actions[:] = ...                                  # [N, K] float32 action indices
    env.step()                                            # writes observations, rewards, terminals
    env.log()                                             # {'perf': ..., 'score': ..., 'n': ...}

The four arrays are numpy-owned and the C envs write into them in place: `env.observations`
[N, D] obs_t, `env.actions` [N, K] f32, `env.rewards` [N] f32, `env.terminals` [N] f32 (1 = the
episode ended on this step; the env already reset itself, so the observation is the new
episode's first). They are the same objects for the life of the env.

N = env.num_agents is the sum of the envs' agents: envs are created until total_agents is
reached, so N >= total_agents, and N == total_agents for every built-in env (one agent each).

The [env] config reaches the C env's puf_init as PufferLib's Dict (numbers, true/false, text,
comma lists, read with dict_get/dict_get_str). With num_buffers > 1 the agents form PufferLib's
env buffers: env.step_buffer(b) steps buffer b alone, without the GIL (see make()).

An env that shows the agent a picture declares it, and env.picture is then (height, width,
channels) (else None): the last H·W·C values of each observation row, rows from the top, channels
last (HWC), after any other features. A header that draws at a fixed size declares it with the
macros PICTURE_HEIGHT, PICTURE_WIDTH, PICTURE_CHANNELS; an env drawn at a configured size reads
the [env] keys picture_height, picture_width, picture_channels with dict_get (and sizes its row
with PUF_OBS_SIZE(env)), and those keys are its declaration. uint8 pictures hold 0..255, float
ones [0, 1]. env.agent_view(i) is agent i's picture as an RGB image, for eyes and GIFs.

A trainer needs three more calls, which stand for whatever an env keeps beyond its arrays (a
Go-Explore env: its archive), so that the trainer names no env feature:
    env.epoch_metrics()             at rollout end: {key: value} to log as env/<key>
    env.save_extras(checkpoint)     before a checkpoint's files: saves the env's state beside it
    env.restore_extras(checkpoint)  on resume: loads it back; returns lines for the user

A fatal signal in the env's C code (a NULL dereference in puf_step, an assert) does not kill the
process: vecenv.c catches it on the thread that ran the env and the call raises EnvCrashError,
naming the signal, the function and the env; the env is dead from then on (every call raises the
same error, close() leaves its memory alone) and the caller keeps what it has, the trainer its
weights. docs/design.md section 10 says why that is safe and what is not.
"""

import shlex
import sys
from pathlib import Path

import numpy as np

from ..build import load_module
from ..errors import EnvCrashError
from ..interface import PICTURE_KEYS, EnvBase, check_counts, merge_config, usable_cpus
from .goexplore import GoExploreMixin, check_config


class VecEnv(EnvBase):
    """See the module docstring. Create with envs.make(). A header that includes goexplore.h
    gets a GoExploreVecEnv (below), with the archive's methods."""

    _crash = None  # the EnvCrashError once a fatal signal in the env's code made the vecenv dead

    def __init__(self, source, total_agents, config=None, num_threads=None, seed=0,
                 check_actions=True, num_buffers=1):
        self.source = source  # the EnvSource (envs.resolve)
        self.name = source.name
        self.config = self._merge_config(source, config)
        self.header = header = self._env_header()
        check_counts(total_agents, seed)
        self.check_actions = check_actions  # set False to skip validation in a hot loop

        mod = self._load_module(header)
        self._ffi, self._lib = ffi, lib = mod.ffi, mod.lib
        sizes = ffi.new("int[]", lib.vec_num_atns())
        lib.vec_act_sizes(sizes)
        self.act_sizes = tuple(sizes)
        if min(self.act_sizes, default=0) < 1:
            raise ValueError(f"{header}: ACT_SIZES {list(self.act_sizes)} (NUM_ATNS {len(self.act_sizes)}): every "
                             f"head needs size >= 1 (1 = a continuous head, >= 2 = a discrete head's choices)")
        obs_type = ffi.string(lib.vec_obs_type()).decode()
        if obs_type == "unknown":
            raise TypeError(f"{header}: obs_t must be a plain C number type (float, unsigned "
                            f"char, ...); this host cannot map it to a numpy dtype")
        self.obs_dtype = np.dtype(obs_type)

        # [env] config -> a C-owned Dict (PufferLib's envs read it with dict_get/dict_get_str)
        self._kwargs = ffi.gc(lib.vec_dict_new(b"env"), lib.vec_dict_free)
        for k, v in self.config.items():  # numbers and text alike go in as ini text
            lib.vec_dict_put(self._kwargs, k.encode(), 0.0, (repr(v) if isinstance(v, float) else str(v)).encode())

        if num_threads is None:
            num_threads = usable_cpus()
        if not isinstance(num_threads, (int, np.integer)) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
        err = ffi.new("char[]", 1024)
        self._crash = None
        lib.vec_guard_enable(1)  # a fatal signal in the env's code: EnvCrashError, not a dead process
        self._vec = lib.vec_create(int(total_agents), self._kwargs, int(seed), 1, err, 1024)
        if self._vec == ffi.NULL:
            raise ValueError(f"creating {self.name} envs failed: {ffi.string(err).decode()}")
        self._check_crash()  # puf_init
        self.num_envs = lib.vec_num_envs(self._vec)
        self.num_agents = n = lib.vec_num_agents(self._vec)
        self.obs_size = lib.vec_env_obs_size(self._vec)  # the row after puf_init (PUF_OBS_SIZE)
        try:
            self.picture = self._declared_picture()
        except ValueError:
            self.close()
            raise
        # More threads than CPUs (PufferLib's default is 16) only makes OpenMP threads wait on
        # each other; more than envs leaves threads idle.
        self.num_threads = max(1, min(int(num_threads), usable_cpus(), self.num_envs))
        lib.vec_set_threads(self._vec, self.num_threads)
        # "openmp", or the vecenv's own threads without OpenMP: "pthreads" / "win32" (same partition)
        self.threads_kind = ffi.string(lib.vec_threads_kind()).decode()
        try:
            self.buffers = self._split_buffers(num_buffers)
        except ValueError:
            self.close()
            raise

        self._observations = np.zeros((n, self.obs_size), dtype=self.obs_dtype)
        self._actions = np.zeros((n, len(self.act_sizes)), dtype=np.float32)
        self._rewards = np.zeros(n, dtype=np.float32)
        self._terminals = np.zeros(n, dtype=np.float32)
        self._action_mask = np.ones((n, sum(self.act_sizes)), dtype=np.uint8)
        self._setup_actions()
        lib.vec_bind(self._vec, ffi.from_buffer(self._observations),
                     ffi.cast("float*", ffi.from_buffer(self._actions)),
                     ffi.cast("float*", ffi.from_buffer(self._rewards)),
                     ffi.cast("float*", ffi.from_buffer(self._terminals)),
                     ffi.cast("unsigned char*", ffi.from_buffer(self._action_mask)))

    # Hooks for envs that are not one plain header (envs/js/env.py: a JavaScript game file runs
    # in a header built for its picture size and key table).
    def _env_header(self):
        return self.source.path

    def _load_module(self, header):
        return load_module(header)

    def _declared_picture(self):
        """(height, width, channels) from the header's PICTURE_* macros or the [env] keys
        picture_*, checked against the observation row; None if neither declares one. A header
        that declares the macros draws at that size whatever the ini says, so keys that disagree
        with them are an error rather than silently ignored."""
        out = self._ffi.new("int[3]")
        self._lib.vec_picture(out)
        macros = tuple(out)
        given = [k for k in PICTURE_KEYS if k in self.config]
        ini = self.source.ini
        keys = None
        if given:
            if len(given) != 3:
                missing = [k for k in PICTURE_KEYS if k not in given]
                raise ValueError(f"{ini}: [env] declares a picture with {', '.join(given)} but lacks "
                                 f"{', '.join(missing)}; a picture needs all three of {', '.join(PICTURE_KEYS)}")
            vals = [self.config[k] for k in PICTURE_KEYS]
            if not all(isinstance(v, (int, float)) and float(v).is_integer() for v in vals):
                raise ValueError(f"{ini}: [env] {', '.join(f'{k} = {v!r}' for k, v in zip(PICTURE_KEYS, vals))}: "
                                 f"the picture's height, width and channels must be whole numbers")
            keys = tuple(int(v) for v in vals)
        if any(macros):
            if keys is not None and keys != macros:
                raise ValueError(f"{self.header} declares a {macros[0]}x{macros[1]}x{macros[2]} picture "
                                 f"(PICTURE_HEIGHT x PICTURE_WIDTH x PICTURE_CHANNELS), but [env] of {ini} "
                                 f"says {keys[0]}x{keys[1]}x{keys[2]}; the header draws at its own size: "
                                 f"remove the picture_* keys or make them agree")
            picture, where = macros, f"{self.header} (PICTURE_* macros)"
        elif keys is not None:
            picture, where = keys, f"{ini} ([env] picture_* keys)"
        else:
            return None
        h, w, c = picture
        if min(picture) < 1:
            raise ValueError(f"{where}: picture {h}x{w}x{c} (height x width x channels): each must be >= 1 "
                             f"(channels: 1 for grayscale, 3 for RGB)")
        if h * w * c > self.obs_size:
            raise ValueError(f"{where}: a {h}x{w}x{c} picture is {h * w * c} values, more than the "
                             f"{self.obs_size} of an observation row; the picture is the last "
                             f"height*width*channels values of the row")
        return picture

    def _split_buffers(self, num_buffers):
        """PufferLib's num_buffers groups: contiguous runs of whole envs with equal agent counts.
        Returns [(env_lo, env_hi, row_lo, row_hi)] per buffer."""
        if not isinstance(num_buffers, (int, np.integer)) or num_buffers < 1:
            raise ValueError(f"num_buffers must be a positive int, got {num_buffers!r}")
        per_env = self._ffi.new("int[]", self.num_envs)
        self._lib.vec_env_agents(self._vec, per_env)
        rows = np.concatenate([[0], np.cumsum(list(per_env))])
        N = self.num_agents
        if N % num_buffers:
            raise ValueError(f"num_buffers = {num_buffers} must divide the {N} agents "
                             f"({self.num_envs} {self.name} envs); choose total_agents a multiple "
                             f"of {num_buffers}")
        out, e = [], 0
        for b in range(num_buffers):
            lo = e
            end = (b + 1) * N // num_buffers
            while rows[e] < end:
                e += 1
            if rows[e] != end:
                raise ValueError(f"num_buffers = {num_buffers}: buffer {b} would split an env "
                                 f"(envs of {list(per_env)[:4]}... agents); choose total_agents so "
                                 f"that each buffer holds whole envs")
            out.append((lo, e, int(rows[lo]), int(rows[e])))
        return out

    def step_buffer(self, b, actions=None, threads=None):
        """Steps buffer b's envs only (its rows of env.actions, or `actions` [rows, K] copied in
        first). Releases the GIL while the C envs step, so another thread can run meanwhile;
        two different buffers may be stepped at once. threads: OpenMP threads for this buffer
        (default: num_threads / num_buffers, as PufferLib splits them). With one buffer this is
        step(): a trainer steps any number of buffers the same way."""
        vec = self._live()
        e0, e1, r0, r1 = self.buffers[b]
        self._take_actions(actions, r0, r1)
        if threads is None:
            threads = max(1, self.num_threads // self.num_buffers)
        if self._lib.vec_step_range(vec, e0, e1, int(threads)):
            self._check_crash()

    def set_clear_outputs(self, on):
        """False: rewards/terminals are left to the env between steps (PufferLib's CPU evaluator
        does not clear them); True (default): zeroed before every step, as PufferLib's trainer."""
        self._lib.vec_set_clear_outputs(self._live(), int(bool(on)))

    def set_key(self, key, down):
        """Forward a key (GLFW/raylib key code) to the env's raylib IsKeyDown/IsKeyPressed."""
        self._lib.vec_set_key(int(key), int(bool(down)))

    @staticmethod
    def _merge_config(source, overrides):
        """The env ini's [env] keys updated by `overrides` (interface.merge_config's rules)."""
        return merge_config(source.env_config(), overrides, source.name, source.ini)

    def _live(self):
        if self._crash is not None:
            raise self._crash
        if self._vec is None:
            raise RuntimeError(f"{self.name} env is closed")
        return self._vec

    def _check_crash(self):
        """Raises EnvCrashError if a fatal signal in the env's code made the vecenv dead."""
        if self._crash is None and self._vec is not None and self._lib.vec_crashed(self._vec):
            what = self._ffi.string(self._lib.vec_crash_message(self._vec)).decode("utf-8", "replace")
            self._crash = EnvCrashError(f"{self.name}: the env's C code crashed: {what} ({self.source.path})",
                                        self._crash_advice())
        if self._crash is not None:
            raise self._crash

    def _crash_advice(self):
        """What to do after a crash: isolation, and the commands that reproduce it in a debugger or
        under AddressSanitizer (the checkout's sanitizer build, for a plain header)."""
        debugger = "lldb -o run --" if sys.platform == "darwin" else "gdb -batch -ex run -ex bt --args"
        command = shlex.join(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
        sanitize = Path(__file__).resolve().parents[2] / "checks" / "sanitize_envs.sh"
        asan = (f" (or under AddressSanitizer: {sanitize} {self.header})"
                if sanitize.is_file() and Path(self.header) == Path(self.source.path) else "")
        return (f"--env.isolate 1 runs the env in a process that is restarted after a crash; to find the bug: "
                f"{debugger} {command}{asan}")

    def reset(self):
        """Resets every env; observations hold the first observations, rewards and terminals 0."""
        if self._lib.vec_reset(self._live()):
            self._check_crash()
        return self._observations

    def step(self, actions=None):
        """Steps every env with env.actions (or copies `actions` [N, K] into it first)."""
        vec = self._live()
        self._take_actions(actions)
        if self._lib.vec_step(vec):
            self._check_crash()

    def log(self):
        """Episode stats since the last call, averaged over the episodes that finished
        (PufferLib's vec_log): {'perf': ..., 'score': ..., ..., 'n': episodes}; {} if none."""
        return self._log_range(0, self.num_envs)

    def log_counts(self):
        """Episodes finished by each env since its log was last read: float32 [num_envs]."""
        out = np.zeros(self.num_envs, np.float32)
        self._lib.vec_log_counts(self._live(), self._ffi.cast("float*", self._ffi.from_buffer(out)))
        return out

    def env_log(self, index):
        """Like log() for env `index` alone (reads and clears only its stats)."""
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range [0, {self.num_envs})")
        return self._log_range(index, index + 1)

    def _log_range(self, lo, hi):
        vec, lib, ffi = self._live(), self._lib, self._ffi
        total = lib.vec_log_range(vec, lo, hi)
        self._check_crash()  # puf_log
        if total == 0:
            return {}
        d = lib.vec_log_dict(vec)
        out = {ffi.string(lib.vec_dict_key(d, i)).decode(): float(lib.vec_dict_value(d, i))
               for i in range(lib.vec_dict_size(d))}
        out["n"] = float(total)  # the episode count (an env's own "n" field is n / n = 1)
        return out

    def render(self, index=0):
        """RGB image of env `index` (the agent index when every env has one agent):
        np.uint8 [H, W, 3]."""
        vec = self._live()
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range [0, {self.num_envs})")
        w = self._ffi.new("int*")
        h = self._ffi.new("int*")
        ptr = self._lib.vec_render(vec, index, w, h)
        self._check_crash()
        if ptr == self._ffi.NULL:
            raise NotImplementedError(f"{self.name}: puf_render drew nothing (draw with raylib "
                                      f"calls: InitWindow, BeginDrawing, DrawRectangle, ...)")
        buf = self._ffi.buffer(ptr, w[0] * h[0] * 3)
        return np.frombuffer(buf, dtype=np.uint8).reshape(h[0], w[0], 3).copy()

    @property
    def has_scripted(self):
        return bool(self._lib.vec_has_scripted())

    def scripted_actions(self):
        """Writes the env's rule-based policy (PUF_SCRIPTED_POLICY or PUF_SCRIPTED_ENV_POLICY)
        into env.actions."""
        if not self.has_scripted:
            raise NotImplementedError(f"{self.name} defines no PUF_SCRIPTED_POLICY")
        self._lib.vec_scripted(self._live())
        self._check_crash()
        return self._actions

    def close(self):
        if getattr(self, "_vec", None) is not None:
            self._lib.vec_close(self._vec)  # a crashed vecenv's memory is left alone
            self._vec = None

    def __repr__(self):
        picture = "" if self.picture is None else f", picture={self.picture}"
        return (f"VecEnv({self.name!r}, num_agents={self.num_agents}, obs_size={self.obs_size}{picture}, "
                f"act_sizes={self.act_sizes}, num_threads={self.num_threads} ({self.threads_kind}))")



class GoExploreVecEnv(GoExploreMixin, VecEnv):
    """A VecEnv of a header that includes goexplore.h: its module carries Go-Explore's functions
    (envs/c/goexplore_vec.h), and the trainer reaches the archive through the same three hooks."""

    @staticmethod
    def _merge_config(source, overrides):
        config = VecEnv._merge_config(source, overrides)
        check_config(config)
        return config

    def step_buffer(self, b, actions=None, threads=None):
        super().step_buffer(b, actions, threads)
        if self.num_buffers == 1:  # no other buffer can be stepping: merge the findings now, as step() does
            self._lib.vec_ge_sync(self._live())

    def epoch_metrics(self):
        """log()'s episode stats and the archive's figures (read after log() merged the findings)."""
        return {**self.log(), **self.archive_stats()}

    def save_extras(self, checkpoint):
        """The archive beside `checkpoint`, if Go-Explore is on."""
        return [p for p in (self.save_checkpoint_archive(checkpoint),) if p is not None]

    def restore_extras(self, checkpoint):
        return [m for m in (self.restore_checkpoint_archive(checkpoint),) if m is not None]
