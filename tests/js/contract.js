// The host contract's corners, for tests/test_js_host.py: the env steps frames in C (jsenv.h,
// js_frame) and the prelude in JS (native_p5 = 0); every value a game can observe is folded
// into the score, so the two must give the same rewards, and the same frames.
let sig = 0, calls = 0, trapped = 0;

function setup() { createCanvas(100, 100); }
function resetGame(seed) { sig = seed % 1000; }
function keyPressed() {
  sig = (sig * 31 + keyCode * 3 + key.length + (key === " " ? 100 : 0) + (keyIsPressed ? 7 : 0)) % 1000003;
}
function mix(v) { sig = (sig * 131 + v) % 1000003; }
function draw() {
  const t = typeof frameCount === "number" ? frameCount : frameCount.length;
  mix((keyIsPressed ? 1 : 0) + 2 * keyIsDown(32) + 4 * keyIsDown(37) + 8 * keyIsDown(39) + 16 * keyIsDown(38)
    + 32 * keyIsDown(32.0) + 64 * keyIsDown("32") + 128 * keyIsDown(-0) + 256 * keyIsDown(NaN) + 512 * keyIsDown(300));
  mix(keyCode * 3 + String(key).length + (typeof frameCount === "number" ? Math.floor(frameCount * 2) : 0));
  fill(sig % 256, 40, 90);
  rect(t % 100, 10, 20, 20);
  // a shape left open at the end of each frame: frame() drops it (main.shape = null), so these
  // vertices, before any beginShape(), draw nothing
  vertex(70, 95);
  endShape(CLOSE);
  beginShape();
  vertex(5 + (t % 7), 50);
  vertex(60, 55);
  if (t % 5 === 0) { vertex(30, 90); endShape(CLOSE); }
  // frameCount as the game may leave it: a fraction, then a string ("n" + 1 appends)
  if (t === 40) frameCount = frameCount + 0.5;
  if (t === 120 && typeof frameCount === "number") frameCount = "x";
}

class Probe {
  constructor(s) { this._s = s; }
  get score() { calls++; return this._s; }
}
Probe.prototype.lives = 4;
Probe.prototype.gameState = "PLAYING";

function getGameState() {
  const t = typeof frameCount === "number" ? Math.floor(frameCount) : frameCount.length;
  const s = sig + calls * 1000 + trapped * 100000;
  const late = t > 170 ? "GAMEOVER" : "PLAYING";
  switch (t % 11) {
    case 0: return { score: s, lives: 3, gameState: late };
    case 1: return { score: s, lives: NaN, gameState: "PLAYING" };
    case 2: return { score: s, gameState: "PLAYING" };               // no lives: +undefined || 0
    case 3: return { score: String(s), lives: "2", gameState: "PLAYING" };
    case 4: return { get score() { calls++; return s; }, lives: 1, gameState: "PLAYING" };
    case 5: return new Probe(s);                                       // inherited fields, a getter
    case 6: return { score: s, lives: -0, gameState: "MENU" };        // not a state name
    case 7: { const o = Object.create(null); o.score = s; o.lives = 2; o.gameState = "PLAYING"; return o; }
    case 8: return new Proxy({ score: s, lives: 5, gameState: "PLAYING" },
      { get(o, k) { trapped++; return o[k]; } });
    case 9: return { score: s + 0.25, lives: 2.5, gameState: "WIN".toLowerCase() === "win" && t > 400 ? "WIN" : late };
    default: return { lives: 1, score: s, gameState: late, extra: [t] };
  }
}
