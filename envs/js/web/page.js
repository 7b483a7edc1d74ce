// page.js — runs the game in the page as the env runs it (envs/js/jsenv.h): load, reset with the
// seed, then one step per frame at 60 Hz with the action the keyboard picks from the env's action
// table (or the scripted actions the server gave), recording the action of every frame. At the
// episode's end the recording (seed, actions, score, a hash of the last frame) goes to the server,
// which saves it for `python -m envs.play --replay`.
"use strict";
(function () {
  const cfg = PUF_CONFIG, host = window.__puf, out = new Float64Array(PUF_NATIVE.obuf);
  const W = cfg.width, H = cfg.height;
  const screen = document.getElementById("screen"), status = document.getElementById("status");
  screen.width = W; screen.height = H;
  const ctx = screen.getContext("2d"), img = ctx.createImageData(W, H);
  const actions = [];
  let done = false;

  function show() {
    const px = PUF_NATIVE.picture(), d = img.data;
    for (let i = 0, j = 0; i < W * H; i++, j += 3) {
      d[4 * i] = px[j]; d[4 * i + 1] = px[j + 1]; d[4 * i + 2] = px[j + 2]; d[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    status.textContent = `${cfg.game}  seed ${cfg.seed}  step ${actions.length}  score ${out[0]}  lives ${out[1]}`;
  }

  // the keyboard: the action whose held keys are all down and whose pressed keys were all
  // pressed since the last frame, with the most keys (action 0, no keys, always fits)
  const held = new Set(), pressed = new Set();
  addEventListener("keydown", (e) => {
    if (e.keyCode === 27) { finish("stopped"); return; }
    if (!held.has(e.keyCode)) pressed.add(e.keyCode);
    held.add(e.keyCode);
    if ([32, 37, 38, 39, 40].includes(e.keyCode)) e.preventDefault();
  });
  addEventListener("keyup", (e) => held.delete(e.keyCode));
  function keyboardAction() {
    let best = 0, bestKeys = -1;
    host.actions.forEach(([h, p], i) => {
      if (h.every((k) => held.has(k)) && p.every((k) => pressed.has(k)) && h.length + p.length > bestKeys) {
        best = i; bestKeys = h.length + p.length;
      }
    });
    pressed.clear();
    return best;
  }

  async function sha256(bytes) {
    if (!(window.crypto && crypto.subtle)) return "";
    const h = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    return Array.from(h, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function finish(why) {
    if (done) return;
    done = true;
    show();
    const rec = {
      format: "puffgpu-js-recording", game: cfg.game, game_path: cfg.game_path, game_sha256: cfg.game_sha256,
      picture: [H, W, 3], actions_table: cfg.actions, max_steps: cfg.max_steps, seed: cfg.seed,
      actions, end: why, score: out[0], lives: out[1], state: out[2],
      frame_sha256: await sha256(PUF_NATIVE.picture().slice()),
    };
    window.PUF_RESULT = rec;
    const res = await fetch("recording", { method: "POST", body: JSON.stringify(rec) });
    status.textContent += `\n${why}: ${actions.length} steps, score ${out[0]}; ` + (await res.text());
  }

  function step(a) {
    actions.push(a);
    host.step(a);
    if (out[2] !== 0) return finish(["", "WIN", "GAMEOVER", "EXIT"][out[2]]);
    if (actions.length >= cfg.max_steps) return finish("max_steps");
  }

  host.load();
  host.reset(cfg.seed);
  show();
  if (cfg.script) { // scripted play (tests): as fast as timers allow, in chunks
    const run = () => {
      for (let i = 0; i < 50 && !done; i++) {
        if (actions.length >= cfg.script.length) { finish("script"); break; }
        step(cfg.script[actions.length]);
      }
      if (!done) { show(); setTimeout(run, 0); }
    };
    setTimeout(run, 0);
  } else {
    let next = PUF_CLOCK();
    const frame = (now) => {
      if (done) return;
      while (now >= next && !done) { step(keyboardAction()); next += 1000 / 60; }
      if (now - next > 250) next = now; // a background tab: do not catch up
      show();
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }
})();
