"""Play a JS game in a browser, and replay what was played in the C env.

    python -m envs.play path/to/game.js --browser          # serve the page, open a browser
    python -m envs.play --replay game-<time>.recording.json   # the same episode in the C env

The page (envs/js/web/) runs the game file with the same p5 prelude (envs/js/p5.js) and a
JavaScript copy of the C drawing primitives (web/raster.js), at the env's picture size, upscaled:
what a person sees is what the agent sees. The keyboard picks actions from the env's action
table; the page records the seed and the action of every frame and, at the episode's end, posts
the recording here, which saves it. A replay steps the C env through the same actions from the
same seed and checks that it reaches the same score and the same last frame.
"""

import hashlib
import http.server
import json
import threading
import time
from pathlib import Path

import numpy as np

from puffbase.atomic import atomic_write

from .env import PRELUDE, JsEnv

WEB = Path(__file__).resolve().parent / "web"
FORMAT = "puffgpu-js-recording"


def page_config(source, seed=0, script=None, config=None):
    """What the page needs for the game of `source` (an EnvSource: envs.resolve): the env's picture
    size, action table and max_steps, the seed."""
    path = source.path
    c = JsEnv._merge_config(source, config)
    if c["picture_channels"] != 3:
        c["picture_channels"] = 3  # the page shows color; the replay compares RGB frames
    return {"game": path.name, "game_path": str(path), "game_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "width": c["picture_width"], "height": c["picture_height"], "actions": c["actions"],
            # the page plays and records frames (a frameskip is the trainer's): max_steps in frames
            "max_steps": c["max_steps"] * c["frameskip"], "seed": int(seed), "script": script}


def serve(source, port=8765, seed=0, record=None, script=None, open_browser=True, once=False, quiet=False):
    """Serves the page for the game of `source` (an EnvSource) until Ctrl-C (or, with once, until a
    recording is saved). Returns the path of the last recording saved, or None."""
    cfg = page_config(source, seed, script)
    game_file = Path(cfg["game_path"])
    record = Path(record) if record else Path.cwd() / f"{game_file.stem}-{time.strftime('%Y%m%d-%H%M%S')}.recording.json"
    saved = {"path": None}
    files = {"/": WEB / "index.html", "/index.html": WEB / "index.html", "/raster.js": WEB / "raster.js",
             "/page.js": WEB / "page.js", "/p5.js": PRELUDE, "/game.js": game_file}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            if not quiet:
                super().log_message(fmt, *args)

        def _send(self, code, body, ctype):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/config.js":
                body = ("var PUF_CONFIG = " + json.dumps(cfg) + ";\n").encode()
                return self._send(200, body, "text/javascript; charset=utf-8")
            f = files.get(path)
            if f is None:
                return self._send(404, b"not found", "text/plain")
            ctype = "text/html; charset=utf-8" if f.suffix == ".html" else "text/javascript; charset=utf-8"
            self._send(200, f.read_bytes(), ctype)

        def do_POST(self):
            if self.path.split("?")[0] != "/recording":
                return self._send(404, b"not found", "text/plain")
            data = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8"))
            atomic_write(record, json.dumps(data, indent=1))
            saved["path"] = record
            self._send(200, f"recording saved to {record}".encode(), "text/plain; charset=utf-8")
            if once:
                threading.Thread(target=server.shutdown, daemon=True).start()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    serve.url = url
    if not quiet:
        print(f"serving {game_file.name} at {url} (Ctrl-C stops); recordings go to {record}", flush=True)
    if open_browser:
        import webbrowser
        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return saved["path"]


def read_recording(path):
    rec = json.loads(Path(path).read_text(encoding="utf-8"))
    if rec.get("format") != FORMAT:
        raise ValueError(f"{path} is not a JS game recording (format {rec.get('format')!r}, expected {FORMAT!r})")
    return rec


def replay(recording, source):
    """Steps the C env of the game of `source` (an EnvSource: the recorded game_path, or another
    copy of the game) through a recording's actions from its seed. Returns a dict: steps, score and
    frame_sha256 reached, the recorded ones, and match (True when both agree)."""
    rec = read_recording(recording) if not isinstance(recording, dict) else recording
    path = source.path
    notes = []
    if hashlib.sha256(path.read_bytes()).hexdigest() != rec.get("game_sha256"):
        notes.append(f"{path} differs from the file that was played")
    h, w, _ = rec["picture"]
    env = JsEnv(source, 1, config={"picture_width": w, "picture_height": h, "picture_channels": 3,
                                   "actions": rec["actions_table"], "max_steps": max(rec["max_steps"], 1),
                                   "frameskip": 1},
                num_threads=1)
    env.reset_seed(0, rec["seed"])
    ended = False
    for a in rec["actions"]:
        env.step(np.array([[a]], np.float32))
        if env.terminals[0]:
            ended = True
            break
    if ended:
        frame, (score, lives, state) = env.final(0)
    else:
        frame, (score, lives, state) = env.frame(0), env.game_state(0)
    env.close()
    digest = hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()
    match = score == rec["score"] and (not rec.get("frame_sha256") or digest == rec["frame_sha256"])
    return {"steps": len(rec["actions"]), "score": score, "lives": lives, "state": state, "frame_sha256": digest,
            "recorded_score": rec["score"], "recorded_frame_sha256": rec.get("frame_sha256"), "match": match,
            "frame": frame, "notes": notes}
