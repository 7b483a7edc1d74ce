"""Play an env yourself, watch its scripted policy, or record an episode as a GIF/PNG.

    python -m envs.play platformer                      # play: arrows/WASD move, Up/W/Space jump,
                                                        #       Down/S drop through; Esc quits
    python -m envs.play platformer --scripted           # watch the rule-based policy
    python -m envs.play platformer --scripted --gif platformer.gif   # headless: one episode -> GIF
    python -m envs.play platformer --scripted --png frame.png --frame 100
    python -m envs.play memory                          # turn-based envs: digit keys pick actions
    python -m envs.play path/to/ocean/asteroids/asteroids.h --random   # any PufferLib 5.0 env
    python -m envs.play platformer_sparse --route route.json --gif route.gif   # replay an exported
                                                        #       Go-Explore route (python -m envs.archive)
    python -m envs.play path/to/game.js --browser       # a JS game in a browser page, recorded
    python -m envs.play --replay game-<time>.recording.json   # ... replayed in the C env
    python -m envs.play breakout --scripted --gif b.gif # a picture env: what the agent sees, 4x
    python -m envs.play pixel_platformer --render-view  # a picture env's own render() instead

Humans play the exact env the agents train on (same C header, same frameskip). Keys also reach the
env's own raylib input calls (IsKeyDown, IsKeyPressed), so a PufferLib env's human controls work
(e.g. hold Left Shift in asteroids while --random plays). For an env that declares a picture
(env.picture), the window and the GIF show the agent's observation picture, each pixel a
--view-scale square; --render-view shows the env's render() instead. A window needs a display (use
`xvfb-run -a` on a headless machine); --gif and --png need none.
"""

import argparse
import sys
import time

import numpy as np

from puffbase.console import safe_console
from puffbase.image import write_gif, write_png

from . import registry


def _platformer_keys(glfw, down, actions):
    left = glfw.KEY_LEFT in down or glfw.KEY_A in down
    right = glfw.KEY_RIGHT in down or glfw.KEY_D in down
    actions[0] = 1 if left and not right else 2 if right and not left else 0
    if down & {glfw.KEY_UP, glfw.KEY_W, glfw.KEY_SPACE}:
        actions[1] = 1
    elif down & {glfw.KEY_DOWN, glfw.KEY_S}:
        actions[1] = 2
    else:
        actions[1] = 0


def _breakout_keys(glfw, down, actions):
    left = glfw.KEY_LEFT in down or glfw.KEY_A in down
    right = glfw.KEY_RIGHT in down or glfw.KEY_D in down
    fire = bool(down & {glfw.KEY_UP, glfw.KEY_W, glfw.KEY_SPACE})
    move = 1 if left and not right else 2 if right and not left else 0
    actions[0] = (3, 4, 5)[move] if fire else move  # 0 none, 1/2 left/right, 3 fire, 4/5 left/right+fire


# Real-time envs map held keys to actions and step at a fixed rate; the others are turn-based.
REALTIME_KEYS = {"platformer": _platformer_keys, "pixel_platformer": _platformer_keys,
                 "pixel_platformer_small": _platformer_keys, "breakout": _breakout_keys}


def _frame(env, args):
    """What the window and the GIF show of agent 0: its picture (for an env that declares one,
    unless --render-view) or the env's render()."""
    if env.picture is not None and not args.render_view:
        return env.agent_view(0, args.view_scale)
    return env.render(0)

# glfw key codes -> the browser's keyCode, which JS games read (letters and digits are the same)
_DOM_KEYS = {262: 39, 263: 37, 264: 40, 265: 38, 257: 13, 256: 27, 340: 16, 344: 16, 341: 17, 345: 17}


def _js_keymap(env):
    """A JS game's keys: the action of its table whose held keys are all down and whose pressed
    keys were all pressed since the last step, with the most keys (as its browser page does)."""
    table = env.actions_table

    def keymap(glfw, down, actions, pressed=()):
        dom_down = {_DOM_KEYS.get(k, k) for k in down}
        dom_pressed = {_DOM_KEYS.get(k, k) for k in pressed}
        best, most = 0, -1
        for i, (held, press) in enumerate(table):
            if set(held) <= dom_down and set(press) <= dom_pressed and len(held) + len(press) > most:
                best, most = i, len(held) + len(press)
        actions[0] = best
    return keymap


def _policy(env, args, rng):
    if args.scripted:
        return env.scripted_actions
    if args.random:  # a head of size 1 is continuous: a standard normal draw
        continuous = np.array(env.act_sizes) == 1
        return lambda: env.actions.__setitem__(slice(None), np.where(
            continuous, rng.standard_normal(env.actions.shape), rng.integers(0, env.act_sizes, size=env.actions.shape)))
    return None


def play_route(args):
    """Replays a route file (envs/archive.py export) from the real start: to a GIF, or in a window."""
    from .archive import replay_env
    from .c.goexplore import read_route, replay
    route = read_route(args.route)
    if route["env"] != args.source.name:
        sys.exit(f"{args.route} is a route of {route['env']}, not {args.env}")
    env = replay_env(route, source=args.source)
    res = replay(env, route, frames=True)
    print(f"{env.name}: {res['steps']} steps from the real start (seed {route['seed']}): "
          + ("reached the goal on the last step" if res["reached"] else f"did NOT reach the goal ({res['log']})"))
    if args.gif:
        write_gif(args.gif, res["frames"], fps=args.fps or 15)
        print(f"wrote {args.gif}")
    else:
        from .viewer import Viewer
        frames = res["frames"]
        with Viewer(f"puffgpu {env.name}: route", frames[0].shape[1], frames[0].shape[0], scale=args.scale) as view:
            i = 0
            while view.show(frames[min(i, len(frames) - 1)]):
                time.sleep(1.0 / (args.fps or 15))
                i += 1
    env.close()
    return 0 if res["reached"] else 1


def record(env, args):
    """Runs one episode of agent 0 headless; returns its frames (the terminal step's frame is
    the next episode's start, so it is left out)."""
    rng = np.random.default_rng(args.seed)
    act = _policy(env, args, rng)
    if act is None:
        sys.exit("--gif/--png record without a window: add --scripted or --random")
    env.reset()
    frames = [_frame(env, args)]
    for _ in range(args.max_steps):
        act()
        env.step()
        if env.episode_over(0):  # a whole episode (an Atari game: every life)
            break
        frames.append(_frame(env, args))
    log = env.log()
    print(f"{env.name}: {len(frames)} frames" + (f", {_fmt(log)}" if log else ", episode not finished"))
    return frames


def _fmt(log):
    return " ".join(f"{k}={v:.3g}" for k, v in log.items())


def play(env, args):
    import glfw

    from .viewer import Viewer

    rng = np.random.default_rng(args.seed)
    act = _policy(env, args, rng)
    keymap = REALTIME_KEYS.get(env.name)
    if getattr(env, "actions_table", None):
        keymap = _js_keymap(env)
    env.reset()
    frame = _frame(env, args)
    viewer = Viewer(f"puffgpu {env.name}", frame.shape[1], frame.shape[0], scale=args.scale)
    head, episodes = 0, 0
    if act is None and keymap is None:
        print(f"{env.name} is turn-based: press a digit to pick the action of each head "
              f"(head sizes {env.act_sizes}; a continuous head maps 0..9 to -1..1); the env steps once "
              f"every head has one.")
    period = 1.0 / args.fps
    next_time = time.perf_counter()
    held = set()
    while viewer.show(frame):
        down = viewer.keys_down()
        for key in down ^ held:  # raylib's IsKeyDown/IsKeyPressed in the env see these
            env.set_key(key, key in down)
        held = down
        stepped = False
        if act is not None:
            act()
            env.step()
            stepped = True
        elif keymap is not None:
            if getattr(env, "actions_table", None):
                keymap(glfw, viewer.keys_down(), env.actions[0], viewer.keys_pressed())
            else:
                keymap(glfw, viewer.keys_down(), env.actions[0])
            env.step()
            stepped = True
        else:
            for key in viewer.keys_pressed():
                digit = key - glfw.KEY_0
                continuous = env.act_sizes[head] == 1  # digits 0..9 pick -1 .. 1
                if 0 <= digit < (10 if continuous else env.act_sizes[head]):
                    env.actions[0, head] = digit / 4.5 - 1 if continuous else digit
                    head += 1
                    if head == len(env.act_sizes):
                        env.step()
                        stepped, head = True, 0
                        print(f"actions {env.actions[0].tolist()} -> reward "
                              f"{env.rewards[0]:+.3f}")
        if stepped and env.episode_over(0):
            episodes += 1
            print(f"episode {episodes}: {_fmt(env.log())}")
        frame = _frame(env, args)
        next_time += period
        delay = next_time - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            next_time = time.perf_counter()
    viewer.close()


def main(argv=None):
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    p = argparse.ArgumentParser(prog="python -m envs.play", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("env", nargs="?", help=f"env name ({registry.describe_envs()}), or the path of a header, JS game or server ini")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--scripted", action="store_true", help="the env's rule-based policy plays")
    who.add_argument("--random", action="store_true", help="uniform random actions")
    who.add_argument("--route", metavar="FILE", help="replay a Go-Explore route file from the real start")
    p.add_argument("--gif", metavar="PATH", help="record one episode to an animated GIF (no window)")
    p.add_argument("--png", metavar="PATH", help="write one frame of the episode to a PNG (no window)")
    p.add_argument("--frame", type=int, default=0, help="which frame --png writes (negative: from the end)")
    p.add_argument("--max-steps", type=int, default=5000, help="longest recorded episode")
    p.add_argument("--seed", type=int, default=0, help="env seed (and --random's)")
    p.add_argument("--scale", type=int, default=4, help="window pixels per env pixel")
    p.add_argument("--render-view", action="store_true",
                   help="show the env's render() even if it declares a picture (default: the agent's picture)")
    p.add_argument("--view-scale", type=int, default=4,
                   help="GIF/window pixels per picture pixel of the agent's view (default 4)")
    p.add_argument("--fps", type=float, default=None,
                   help="steps per second (default: 60/frameskip for envs with frameskip, else 30)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override an [env] config key, e.g. --set frameskip=4")
    p.add_argument("--browser", action="store_true", help="a JS game: play it in a browser page that records "
                   "the seed and every frame's action")
    p.add_argument("--port", type=int, default=8765, help="--browser: the page's port on 127.0.0.1 (0: any free one)")
    p.add_argument("--record", metavar="PATH", help="--browser: where the recording goes (default "
                   "<game>-<time>.recording.json here)")
    p.add_argument("--no-open", action="store_true", help="--browser: do not open a browser, only serve the page")
    p.add_argument("--replay", metavar="RECORDING", help="replay a browser recording in the C env and check that "
                   "it reaches the same score and last frame (env: the game file, default the recorded path)")
    args = p.parse_args(argv)

    if args.replay:  # a JS game's recording (envs/js/browser.py)
        from .js.browser import read_recording, replay
        rec = read_recording(args.replay)
        res = replay(rec, registry.resolve(args.env or rec["game_path"]))
        for note in res["notes"]:
            print(f"note: {note}")
        same = "the same" if res["frame_sha256"] == res["recorded_frame_sha256"] else "a DIFFERENT"
        print(f"replayed {res['steps']} actions in the C env: score {res['score']:g} (recorded {res['recorded_score']:g}), "
              f"{same} last frame")
        if args.png:
            write_png(args.png, res["frame"])
            print(f"wrote {args.png}")
        sys.exit(0 if res["match"] else 1)
    if args.env is None:
        p.error("name an env (or pass --replay RECORDING)")
    args.source = source = registry.resolve(args.env)
    if args.browser:
        if source.kind.browser is None:
            kinds = ", ".join(f"{k.title}s ({k.suffix})" for k in registry.KINDS if k.browser is not None)
            p.error(f"--browser plays {kinds}; {args.env} is a {source.kind.title}")
        source.kind.browser(source, port=args.port, seed=args.seed, record=args.record, open_browser=not args.no_open)
        return

    if args.route:
        sys.exit(play_route(args))
    config = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--set expects KEY=VALUE, got {item!r}")
        config[key] = value
    env = registry.make(source, 1, config=config, num_threads=1, seed=args.seed)
    if args.fps is None:
        args.fps = (60.0 / env.config["frameskip"] if "frameskip" in env.config
                    else 60.0 if getattr(env, "actions_table", None) else 30.0)  # p5 draws at 60 Hz
    if args.gif or args.png:
        frames = record(env, args)
        if args.gif:
            write_gif(args.gif, frames, fps=args.fps)
            print(f"wrote {args.gif}")
        if args.png:
            if not -len(frames) <= args.frame < len(frames):
                sys.exit(f"--frame {args.frame} out of range: the episode has {len(frames)} frames")
            write_png(args.png, frames[args.frame])
            print(f"wrote {args.png}")
    else:
        play(env, args)
    env.close()


if __name__ == "__main__":
    main()
