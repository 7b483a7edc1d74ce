// p5.js — puffgpu's p5.js subset for JavaScript games, evaluated before the game in every env's
// QuickJS runtime (envs/js/jsenv.h) and in the browser page (envs/js/web/), so both run the same
// rules: all p5 state (colors, modes, transforms, keys, random numbers) lives here, and every
// drawing call becomes one of four primitives on pixel coordinates that the host implements
// (__native: poly, ellipse, image, background, plus clear, target, canvas). Everything here is
// plain IEEE double arithmetic, so a seed and a list of actions give the same frames everywhere.
//
// Deterministic math: Math.sin, cos, tan, asin, acos, atan, atan2, exp, log, pow, ... are
// replaced by fixed implementations from +, -, *, /, sqrt and bit operations (the classic
// fdlibm kernels), because engines' own Math functions may differ in the last bit. The `**`
// operator cannot be replaced: games that need identical frames everywhere use pow().
//
// The host contract (what the env calls): __puf.load() after the game file is evaluated (setup,
// resetGame(0), one draw); __puf.reset(seed) (random generators seeded, resetGame(seed), one
// draw); __puf.step(action) (keys of the action table, keyPressed for pressed keys, one draw,
// getGameState into out: score, lives, state code); __puf.hold(action) (the same without the
// press: the later frames of a frameskip).
(function (G) {
  "use strict";
  const N = G.__native;
  delete G.__native;
  const F = new Float64Array(N.fbuf);
  const OUT = new Float64Array(N.obuf);
  const PW = N.width, PH = N.height;
  const GAME = N.game;

  // ---- deterministic math ------------------------------------------------------------------
  const M = G.Math;
  const floor = M.floor, sqrtN = M.sqrt, absN = M.abs;
  const PI_ = 3.141592653589793, HALF_PI_ = 1.5707963267948966, TWO_PI_ = 6.283185307179586;
  const f64 = new Float64Array(1), u32 = new Uint32Array(f64.buffer);
  const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  const HI = LITTLE ? 1 : 0, LO = LITTLE ? 0 : 1;
  function twoPow(k) { // 2^k exactly, k integer
    if (k > 1023) return twoPow(1023) * twoPow(k - 1023);
    if (k < -1022) return twoPow(-1022) * twoPow(k + 1022 < -1022 ? -1022 : k + 1022);
    u32[HI] = (k + 1023) << 20; u32[LO] = 0;
    return f64[0];
  }
  function ksin(x) {
    const z = x * x;
    return x + x * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04
      + z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
  }
  function kcos(x) {
    const z = x * x;
    return 1 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * (2.48015872894767294178e-05
      + z * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  }
  function reduce(x) { // x = n*pi/2 + r, |r| <= ~pi/4; returns n mod 4 in q
    const n = floor(x * 0.6366197723675814 + 0.5);
    const r = ((x - n * 1.57079632673412561417) - n * 6.07710050630396597660e-11) - n * 2.02226624879595063154e-21;
    return [r, ((n % 4) + 4) % 4];
  }
  function sin(x) {
    if (!(x - x === 0)) return NaN;
    if (absN(x) < 0.7853981633974483) return ksin(x);
    const [r, q] = reduce(x);
    return q === 0 ? ksin(r) : q === 1 ? kcos(r) : q === 2 ? -ksin(r) : -kcos(r);
  }
  function cos(x) {
    if (!(x - x === 0)) return NaN;
    if (absN(x) < 0.7853981633974483) return kcos(x);
    const [r, q] = reduce(x);
    return q === 0 ? kcos(r) : q === 1 ? -ksin(r) : q === 2 ? -kcos(r) : ksin(r);
  }
  function tan(x) { return sin(x) / cos(x); }
  const ATANHI = [4.63647609000806093515e-01, 7.85398163397448278999e-01, 9.82793723247329054082e-01, 1.57079632679489655800e+00];
  const ATANLO = [2.26987774529616870924e-17, 3.06161699786838301793e-17, 1.39033110312309984516e-17, 6.12323399573676603587e-17];
  function atan(x) {
    if (x !== x) return NaN;
    const neg = x < 0;
    let ax = neg ? -x : x, id;
    if (ax > 1e17) return neg ? -HALF_PI_ : HALF_PI_;
    if (ax < 0.4375) id = -1;
    else if (ax < 1.1875) {
      if (ax < 0.6875) { id = 0; ax = (2 * ax - 1) / (2 + ax); } else { id = 1; ax = (ax - 1) / (ax + 1); }
    } else if (ax < 2.4375) { id = 2; ax = (ax - 1.5) / (1 + 1.5 * ax); } else { id = 3; ax = -1 / ax; }
    const z = ax * ax, w = z * z;
    const s1 = z * (3.33333333333329318027e-01 + w * (1.42857142725034663711e-01 + w * (9.09088713343650656196e-02
      + w * (6.66107313738753120669e-02 + w * (4.97687799461593236017e-02 + w * 1.62858201153657823623e-02)))));
    const s2 = w * (-1.99999999998764832476e-01 + w * (-1.11111104054623557880e-01 + w * (-7.69187620504482999495e-02
      + w * (-5.83357013379057348645e-02 + w * -3.65315727442169155270e-02))));
    let r;
    if (id < 0) r = ax - ax * (s1 + s2);
    else r = ATANHI[id] - ((ax * (s1 + s2) - ATANLO[id]) - ax);
    return neg ? -r : r;
  }
  function atan2(y, x) {
    if (x !== x || y !== y) return NaN;
    if (x === 0 && y === 0) return (1 / x < 0) ? (1 / y < 0 ? -PI_ : PI_) : (1 / y < 0 ? -0 : 0);
    if (x === Infinity || x === -Infinity || y === Infinity || y === -Infinity) {
      const fx = x === Infinity ? 1 : x === -Infinity ? -1 : 0, fy = y === Infinity ? 1 : y === -Infinity ? -1 : 0;
      return atan2(fy !== 0 ? fy : (y >= 0 ? 0 : -0) , fx !== 0 ? fx : (x >= 0 ? 1e-300 : -1e-300));
    }
    if (x === 0) return y > 0 ? HALF_PI_ : -HALF_PI_;
    const a = atan(absN(y / x));
    if (x > 0) return y >= 0 && 1 / y > 0 ? a : -a;
    return y >= 0 && (y > 0 || 1 / y > 0) ? PI_ - a : a - PI_;
  }
  function asin(x) {
    if (!(x >= -1 && x <= 1)) return NaN;
    return atan2(x, sqrtN((1 - x) * (1 + x)));
  }
  function acos(x) {
    if (!(x >= -1 && x <= 1)) return NaN;
    return atan2(sqrtN((1 - x) * (1 + x)), x);
  }
  function exp(x) {
    if (x !== x) return NaN;
    if (x > 709.782712893384) return Infinity;
    if (x < -745.1332191019412) return 0;
    const k = floor(x * 1.44269504088896338700 + 0.5);
    const hi = x - k * 6.93147180369123816490e-01, lo = k * 1.90821492927058770002e-10;
    const r = hi - lo, z = r * r;
    const c = r - z * (1.66666666666666019037e-01 + z * (-2.77777777770155933842e-03 + z * (6.61375632143793436117e-05
      + z * (-1.65339022054652515390e-06 + z * 4.13813679705723846039e-08))));
    const y = 1 - ((lo - (r * c) / (2 - c)) - hi);
    return y * twoPow(k);
  }
  function log(x) {
    if (x !== x || x < 0) return NaN;
    if (x === 0) return -Infinity;
    if (x === Infinity) return Infinity;
    let k = 0;
    if (x < 2.2250738585072014e-308) { x *= 18014398509481984; k = -54; } // 2^54: subnormals
    f64[0] = x;
    let hx = u32[HI];
    k += (hx >>> 20) - 1023;
    hx &= 0x000fffff;
    const i = (hx + 0x95f64) & 0x100000; // normalize mantissa into [sqrt(2)/2, sqrt(2))
    u32[HI] = hx | (i ^ 0x3ff00000);
    k += i >>> 20;
    const f = f64[0] - 1;
    const s = f / (2 + f), z = s * s, w = z * z;
    const t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    const t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    const R = t2 + t1, hfsq = 0.5 * f * f;
    return k * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + R) + k * 1.90821492927058770002e-10)) - f);
  }
  function powi(x, n) { // x^n for an integer n, by squaring
    let r = 1, b = x, e = n < 0 ? -n : n;
    while (e > 0) { if (e % 2 === 1) r *= b; b *= b; e = floor(e / 2); }
    return n < 0 ? 1 / r : r;
  }
  function pow(x, y) {
    if (y === 0) return 1;
    if (x !== x || y !== y) return NaN;
    if (y === floor(y) && absN(y) <= 1024) return powi(x, y);
    if (x === 0) return y > 0 ? 0 : Infinity;
    if (x < 0) {
      if (y !== floor(y)) return NaN;
      const odd = floor(y / 2) * 2 !== y;
      const r = exp(y * log(-x));
      return odd ? -r : r;
    }
    if (y === 0.5) return sqrtN(x);
    return exp(y * log(x));
  }
  const LN10 = 2.302585092994046, LN2 = 0.6931471805599453;
  const detMath = {
    sin, cos, tan, asin, acos, atan, atan2, exp, log, pow,
    log2: (x) => log(x) / LN2, log10: (x) => log(x) / LN10, log1p: (x) => log(1 + x), expm1: (x) => exp(x) - 1,
    sinh: (x) => (exp(x) - exp(-x)) / 2, cosh: (x) => (exp(x) + exp(-x)) / 2,
    tanh: (x) => { if (x > 20) return 1; if (x < -20) return -1; const e = exp(2 * x); return (e - 1) / (e + 1); },
    asinh: (x) => (x < 0 ? -1 : 1) * log(absN(x) + sqrtN(x * x + 1)), acosh: (x) => log(x + sqrtN(x * x - 1)),
    atanh: (x) => 0.5 * log((1 + x) / (1 - x)), cbrt: (x) => (x < 0 ? -pow(-x, 1 / 3) : pow(x, 1 / 3)),
    hypot: (...a) => { let s = 0; for (const v of a) s += v * v; return sqrtN(s); },
  };
  for (const k in detMath) Object.defineProperty(M, k, { value: detMath[k], writable: true, configurable: true });

  // ---- random: mulberry32, seeded by the host's reset ---------------------------------------
  // the state is the host's memory where it has one (its C Math.random shares it)
  const RS = new Float64Array(N.rstate || 1);
  function rnd() {
    const rs = RS[0] = (RS[0] + 0x6D2B79F5) | 0;
    let t = M.imul(rs ^ (rs >>> 15), rs | 1);
    t ^= t + M.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  Object.defineProperty(M, "random", { value: rnd, writable: true, configurable: true });

  // ---- p5 constants ------------------------------------------------------------------------
  const C = {
    PI: PI_, TWO_PI: TWO_PI_, HALF_PI: HALF_PI_, QUARTER_PI: PI_ / 4, TAU: TWO_PI_,
    DEGREES: "degrees", RADIANS: "radians",
    CORNER: "corner", CORNERS: "corners", CENTER: "center", RADIUS: "radius",
    LEFT: "left", RIGHT: "right", TOP: "top", BOTTOM: "bottom", BASELINE: "alphabetic",
    CLOSE: "close", OPEN: "open", CHORD: "chord", PIE: "pie",
    POINTS: 0, LINES: 1, TRIANGLES: 4, TRIANGLE_FAN: 6, TRIANGLE_STRIP: 5, QUADS: "quads", QUAD_STRIP: "quad_strip",
    RGB: "rgb", HSB: "hsb", HSL: "hsl",
    ROUND: "round", SQUARE: "butt", PROJECT: "square", MITER: "miter", BEVEL: "bevel",
    NORMAL: "normal", BOLD: "bold", ITALIC: "italic", BOLDITALIC: "bold italic",
    BACKSPACE: 8, DELETE: 46, ENTER: 13, RETURN: 13, TAB: 9, ESCAPE: 27, SHIFT: 16, CONTROL: 17, OPTION: 18, ALT: 18,
    UP_ARROW: 38, DOWN_ARROW: 40, LEFT_ARROW: 37, RIGHT_ARROW: 39,
    ARROW: "default", CROSS: "crosshair", HAND: "pointer", MOVE: "move", TEXT: "text", WAIT: "wait",
    P2D: "p2d", WEBGL: "webgl", BLEND: "source-over", ADD: "lighter",
  };
  for (const k in C) G[k] = C[k];
  const KEY_NAMES = { 37: "ArrowLeft", 38: "ArrowUp", 39: "ArrowRight", 40: "ArrowDown", 32: " ", 13: "Enter",
    27: "Escape", 16: "Shift", 17: "Control", 18: "Alt", 8: "Backspace", 9: "Tab", 46: "Delete" };
  function keyName(k) {
    if (KEY_NAMES[k] !== undefined) return KEY_NAMES[k];
    if (k >= 65 && k <= 90) return String.fromCharCode(k + 32);
    if (k >= 48 && k <= 57) return String.fromCharCode(k);
    return "Unidentified";
  }

  // ---- colors ------------------------------------------------------------------------------
  const NAMED = { black: [0, 0, 0], white: [255, 255, 255], red: [255, 0, 0], green: [0, 128, 0], blue: [0, 0, 255],
    yellow: [255, 255, 0], cyan: [0, 255, 255], aqua: [0, 255, 255], magenta: [255, 0, 255], fuchsia: [255, 0, 255],
    gray: [128, 128, 128], grey: [128, 128, 128], orange: [255, 165, 0], purple: [128, 0, 128], pink: [255, 192, 203],
    brown: [165, 42, 42], lime: [0, 255, 0], navy: [0, 0, 128], teal: [0, 128, 128], maroon: [128, 0, 0],
    olive: [128, 128, 0], silver: [192, 192, 192], gold: [255, 215, 0], darkgray: [169, 169, 169],
    darkgrey: [169, 169, 169], lightgray: [211, 211, 211], lightgrey: [211, 211, 211], darkgreen: [0, 100, 0],
    darkblue: [0, 0, 139], darkred: [139, 0, 0], skyblue: [135, 206, 235], violet: [238, 130, 238],
    indigo: [75, 0, 130], coral: [255, 127, 80], salmon: [250, 128, 114], crimson: [220, 20, 60],
    khaki: [240, 230, 140], beige: [245, 245, 220], tan: [210, 180, 140], turquoise: [64, 224, 208],
    transparent: [0, 0, 0, 0] };
  class Color {
    constructor(levels) { this.levels = levels; this._array = levels.map((v) => v / 255); }
    toString() { const l = this.levels; return `rgba(${l[0]},${l[1]},${l[2]},${l[3] / 255})`; }
    setAlpha(a) { this.levels[3] = clampByte(a * 255 / main.S[S_MAXES + 3]); }
    setRed(v) { this.levels[0] = clampByte(v); }
    setGreen(v) { this.levels[1] = clampByte(v); }
    setBlue(v) { this.levels[2] = clampByte(v); }
  }
  function clampByte(v) { v = +v; return v !== v ? 0 : v < 0 ? 0 : v > 255 ? 255 : v; }
  function hsbToRgb(h, s, v) { // all in [0, 1]
    h = (h % 1 + 1) % 1 * 6;
    const i = floor(h), f = h - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    return [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][i % 6];
  }
  function hslToRgb(h, s, l) {
    if (s === 0) return [l, l, l];
    const v = l < 0.5 ? l * (1 + s) : l + s - l * s, sv = 2 * (v - l) / v;
    return hsbToRgb(h, sv, v);
  }
  function parseCss(str) {
    const s = str.trim().toLowerCase();
    let m;
    if (s[0] === "#") {
      const h = s.slice(1);
      if (/^[0-9a-f]{3,4}$/.test(h)) return h.split("").map((c) => parseInt(c + c, 16)).concat(h.length === 3 ? [255] : []);
      if (/^[0-9a-f]{6}([0-9a-f]{2})?$/.test(h)) {
        const out = [];
        for (let i = 0; i < h.length; i += 2) out.push(parseInt(h.slice(i, i + 2), 16));
        if (out.length === 3) out.push(255);
        return out;
      }
    } else if ((m = /^rgba?\(([^)]*)\)$/.exec(s))) {
      const p = m[1].split(/[\s,/]+/).filter((x) => x.length);
      const v = p.map((x, i) => (x.endsWith("%") ? parseFloat(x) * (i < 3 ? 2.55 : 0.01) : parseFloat(x)));
      return [v[0], v[1], v[2], v.length > 3 ? v[3] * 255 : 255];
    } else if (NAMED[s]) {
      const c = NAMED[s];
      return [c[0], c[1], c[2], c.length > 3 ? c[3] : 255];
    }
    throw new Error(`color: cannot read the color string ${JSON.stringify(str)} (puffgpu's p5 subset reads #rgb, #rrggbb, rgb(), rgba() and common color names)`);
  }
  // A renderer's state lives in a Float64Array (slots below) so that the env's C layer
  // (envs/js/p5native.h) reads and writes the picture renderer's state in place: the JS methods
  // here and the C functions that replace the frequent ones are interchangeable within a frame.
  // Modes are codes: rect/ellipse/image 0 corner, 1 corners, 2 center, 3 radius, 4 any other
  // value (drawn as corner); color 0 rgb, 1 hsb, 2 hsl, 3 other; angle 1 degrees, else 0.
  const S_M = 0, S_FILL = 6, S_STROKE = 10, S_DOFILL = 14, S_DOSTROKE = 15, S_SW = 16, S_RECTM = 17,
    S_ELLIPSEM = 18, S_CMODE = 19, S_FAST = 20, S_MAXES = 21, S_TEXTSIZE = 25, S_ANGLEM = 26;
  const S_PUSHED = 27; // slots [0, S_PUSHED) are what push() saves
  const S_BASE = 27, S_IMAGEM = 33, S_DEPTH = 34, S_STACK = 35, STACK_MAX = 256;
  const S_SLOTS = S_STACK + S_PUSHED * STACK_MAX;
  function modeCode(m) { return m === "corner" ? 0 : m === "corners" ? 1 : m === "center" ? 2 : m === "radius" ? 3 : 4; }
  function colorCode(m) { return m === "rgb" ? 0 : m === "hsb" ? 1 : m === "hsl" ? 2 : 3; }
  function makeColor(r, args) {
    const a0 = args[0], S = r.S, cm = S[S_CMODE];
    if (typeof a0 === "number" && S[S_FAST] === 1) { // the common case, fast
      const n = args.length;
      if (n >= 3) return [clampByte(a0), clampByte(args[1]), clampByte(args[2]), n > 3 ? clampByte(args[3]) : 255];
      const g = clampByte(a0);
      return [g, g, g, n === 2 ? clampByte(args[1]) : 255];
    }
    if (args.length === 1 && args[0] instanceof Color) return args[0].levels.slice();
    if (args.length === 1 && Array.isArray(args[0])) args = args[0];
    if (args.length >= 1 && typeof args[0] === "string") {
      const c = parseCss(args[0]);
      if (args.length > 1) c[3] = clampByte(args[1] * 255 / S[S_MAXES + 3]);
      return c.map(clampByte);
    }
    const mx = [S[S_MAXES], S[S_MAXES + 1], S[S_MAXES + 2], S[S_MAXES + 3]];
    let v;
    if (args.length <= 2) {
      const g = +args[0];
      if (cm === 0) v = [g / mx[0], g / mx[1], g / mx[2]];
      else v = [0, 0, g / mx[2]];
      v.push(args.length === 2 ? +args[1] / mx[3] : 1);
    } else {
      v = [+args[0] / mx[0], +args[1] / mx[1], +args[2] / mx[2], args.length > 3 ? +args[3] / mx[3] : 1];
    }
    if (cm === 1 && args.length > 2) v = hsbToRgb(v[0], v[1], v[2]).concat([v[3]]);
    else if (cm === 2 && args.length > 2) v = hslToRgb(v[0], v[1], v[2]).concat([v[3]]);
    else if (cm !== 0 && args.length <= 2) v = [v[2], v[2], v[2], v[3]];
    return v.map((x) => clampByte(x * 255));
  }
  function byte(v) { // one level of an RGB-mode color as the integer a primitive draws with: the
    v = +v;          // same as rgba(clampByte(v)) (v + 0.5 is in [0.5, 255.5], so | 0 is floor)
    return v > 0 ? (v < 255 ? (v + 0.5) | 0 : 255) : 0;
  }
  // fill(...)'s integer color into S[at..at+3] when every argument is a number in RGB mode with
  // 255 maxes (the common case; the same result as rgba(makeColor(...))); false otherwise
  function fastRgb(S, at, a, b, c, d) {
    if (typeof a !== "number" || S[S_FAST] !== 1) return false;
    if (c === undefined) { const g = byte(a); S[at] = g; S[at + 1] = g; S[at + 2] = g; S[at + 3] = b === undefined ? 255 : byte(b); return true; }
    S[at] = byte(a); S[at + 1] = byte(b); S[at + 2] = byte(c); S[at + 3] = d === undefined ? 255 : byte(d);
    return true;
  }
  function argList(a, b, c, d) { // the arguments of a call of up to four, trailing undefined dropped
    return d !== undefined ? [a, b, c, d] : c !== undefined ? [a, b, c] : b !== undefined ? [a, b] : a !== undefined ? [a] : [];
  }
  function setRgba(S, at, levels) { // the integer color a primitive draws with
    S[at] = floor(levels[0] + 0.5); S[at + 1] = floor(levels[1] + 0.5); S[at + 2] = floor(levels[2] + 0.5); S[at + 3] = floor(levels[3] + 0.5);
  }

  // ---- renderers: the picture and createGraphics buffers -------------------------------------
  let current = null; // the renderer whose canvas the host draws into
  class Renderer {
    constructor(id, pw, ph, w, h) {
      this.id = id; this.pw = pw; this.ph = ph;
      this.width = w; this.height = h;
      // the picture's state is the C layer's memory where the host has one
      const S = this.S = id === 0 && N.state ? new Float64Array(N.state) : new Float64Array(S_SLOTS);
      S[S_CMODE] = 0; S[S_FAST] = 1; S.fill(255, S_MAXES, S_MAXES + 4);
      S.fill(255, S_FILL, S_FILL + 4); S[S_STROKE] = 0; S[S_STROKE + 1] = 0; S[S_STROKE + 2] = 0; S[S_STROKE + 3] = 255;
      S[S_DOFILL] = 1; S[S_DOSTROKE] = 1; S[S_SW] = 1;
      S[S_RECTM] = 0; S[S_ELLIPSEM] = 2; S[S_IMAGEM] = 0; S[S_ANGLEM] = 0; S[S_DEPTH] = 0;
      S[S_TEXTSIZE] = 12;
      this.shape = null;
      this.setSize(w, h);
    }
    get textSizeV() { return this.S[S_TEXTSIZE]; }
    setSize(w, h) {
      this.width = w; this.height = h;
      const S = this.S;
      S[S_BASE] = this.pw / w; S[S_BASE + 1] = 0; S[S_BASE + 2] = 0; S[S_BASE + 3] = this.ph / h; S[S_BASE + 4] = 0; S[S_BASE + 5] = 0;
      this.resetMatrix();
    }
    resetMatrix() { const S = this.S; for (let i = 0; i < 6; i++) S[S_M + i] = S[S_BASE + i]; }
    ang(a) { return this.S[S_ANGLEM] === 1 ? a * PI_ / 180 : a; }
    // transforms
    translate(x, y) { const m = this.S; m[4] += m[0] * x + m[2] * y; m[5] += m[1] * x + m[3] * y; }
    scale(x, y) {
      if (y === undefined) y = x;
      if (typeof x === "object") { y = x.y; x = x.x; }
      const m = this.S; m[0] *= x; m[1] *= x; m[2] *= y; m[3] *= y;
    }
    rotate(a) {
      a = this.ang(a);
      const c = cos(a), s = sin(a), m = this.S;
      const a0 = m[0] * c + m[2] * s, b0 = m[1] * c + m[3] * s;
      m[2] = m[2] * c - m[0] * s; m[3] = m[3] * c - m[1] * s; m[0] = a0; m[1] = b0;
    }
    applyMatrix(a, b, c, d, e, f) {
      const m = this.S;
      const n0 = m[0] * a + m[2] * b, n1 = m[1] * a + m[3] * b, n2 = m[0] * c + m[2] * d, n3 = m[1] * c + m[3] * d,
        n4 = m[0] * e + m[2] * f + m[4], n5 = m[1] * e + m[3] * f + m[5];
      m[0] = n0; m[1] = n1; m[2] = n2; m[3] = n3; m[4] = n4; m[5] = n5;
    }
    shearX(a) { this.applyMatrix(1, 0, tan(this.ang(a)), 1, 0, 0); }
    shearY(a) { this.applyMatrix(1, tan(this.ang(a)), 0, 1, 0, 0); }
    push() {
      const S = this.S, d = S[S_DEPTH];
      if (d >= STACK_MAX) throw new RangeError(`push() nested more than ${STACK_MAX} deep (a push() without its pop()?)`);
      S.copyWithin(S_STACK + d * S_PUSHED, 0, S_PUSHED);
      S[S_DEPTH] = d + 1;
    }
    pop() {
      const S = this.S, d = S[S_DEPTH];
      if (d === 0) return;
      S.copyWithin(0, S_STACK + (d - 1) * S_PUSHED, S_STACK + d * S_PUSHED);
      S[S_DEPTH] = d - 1;
    }
    // style
    fill(a, b, c, d) { const S = this.S; if (!fastRgb(S, S_FILL, a, b, c, d)) setRgba(S, S_FILL, makeColor(this, argList(a, b, c, d))); S[S_DOFILL] = 1; }
    noFill() { this.S[S_DOFILL] = 0; }
    stroke(a, b, c, d) { const S = this.S; if (!fastRgb(S, S_STROKE, a, b, c, d)) setRgba(S, S_STROKE, makeColor(this, argList(a, b, c, d))); S[S_DOSTROKE] = 1; }
    noStroke() { this.S[S_DOSTROKE] = 0; }
    strokeWeight(w) { this.S[S_SW] = +w; }
    colorMode(mode, a, b, c, d) {
      const S = this.S;
      let mx;
      if (a !== undefined) mx = b === undefined ? [a, a, a, a] : [a, b, c, d === undefined ? S[S_MAXES + 3] : d];
      else mx = mode === "hsb" ? [360, 100, 100, 1] : mode === "hsl" ? [360, 100, 100, 1] : [255, 255, 255, 255];
      S[S_CMODE] = colorCode(mode);
      S[S_FAST] = mode === "rgb" && mx.every((v) => v === 255) ? 1 : 0;
      for (let i = 0; i < 4; i++) S[S_MAXES + i] = mx[i];
    }
    background(a, b, c0, d) {
      if (a instanceof Graphics) return; // a background image: not in the subset's rules
      const c = BG;
      if (!fastRgb(c, 0, a, b, c0, d)) setRgba(c, 0, makeColor(this, argList(a, b, c0, d)));
      this.use(); N.background(c[0], c[1], c[2], c[3]);
    }
    clear() { this.use(); N.clear(); }
    // geometry helpers
    px(x, y) { const m = this.S; return [m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]]; }
    pixelScale() { const m = this.S; return sqrtN(absN(m[0] * m[3] - m[1] * m[2])); }
    fillPoly(pts, at) { // pts: local [x0, y0, x1, y1, ...]; at: the color's slot (S_FILL or S_STROKE)
      const n = pts.length / 2;
      if (n < 3) return;
      if (n > 8000) throw new RangeError("a shape with more than 8000 vertices");
      const m = this.S;
      for (let i = 0; i < n; i++) {
        const x = pts[2 * i], y = pts[2 * i + 1];
        F[2 * i] = m[0] * x + m[2] * y + m[4];
        F[2 * i + 1] = m[1] * x + m[3] * y + m[5];
      }
      this.use(); N.poly(n, m[at], m[at + 1], m[at + 2], m[at + 3]);
    }
    halfWidth(thin) { // half the stroke width, local units; thin lines and points stay >= 1 pixel
      const s = this.pixelScale();
      let w = this.S[S_SW];
      if (thin && w * s < 1 && s > 0) w = 1 / s;
      return w / 2;
    }
    segment(x0, y0, x1, y1, hw, col) { // a thick segment with square caps
      const dx = x1 - x0, dy = y1 - y0, len = sqrtN(dx * dx + dy * dy);
      if (!(len > 0)) { this.fillPoly([x0 - hw, y0 - hw, x0 + hw, y0 - hw, x0 + hw, y0 + hw, x0 - hw, y0 + hw], col); return; }
      const ux = dx / len * hw, uy = dy / len * hw;
      this.fillPoly([x0 - ux - uy, y0 - uy + ux, x1 + ux - uy, y1 + uy + ux, x1 + ux + uy, y1 + uy - ux, x0 - ux + uy, y0 - uy - ux], col);
    }
    outline(pts, closed) {
      const S = this.S;
      if (!S[S_DOSTROKE] || !(S[S_SW] > 0)) return;
      const hw = this.halfWidth(!S[S_DOFILL]), n = pts.length / 2;
      for (let i = 0; i + 1 < n || (closed && i < n && n > 2); i++) {
        const j = (i + 1) % n;
        this.segment(pts[2 * i], pts[2 * i + 1], pts[2 * j], pts[2 * j + 1], hw, S_STROKE);
      }
    }
    shapePoly(pts, closed) { if (this.S[S_DOFILL]) this.fillPoly(pts, S_FILL); this.outline(pts, closed); }
    ellipsePrim(cx, cy, rx, ry, rxi, ryi, a0, a1, at) { // local center and radii; inner 0: filled
      const m = this.S, det = m[0] * m[3] - m[1] * m[2];
      if (!(rx > 0 && ry > 0) || det === 0 || !(det - det === 0)) return;
      const pcx = m[0] * cx + m[2] * cy + m[4], pcy = m[1] * cx + m[3] * cy + m[5];
      F[0] = pcx; F[1] = pcy;
      F[2] = m[3] / det; F[3] = -m[2] / det; F[4] = -m[1] / det; F[5] = m[0] / det;
      F[6] = 1 / (rx * rx); F[7] = 1 / (ry * ry);
      if (rxi > 0 && ryi > 0) { F[8] = 1 / (rxi * rxi); F[9] = 1 / (ryi * ryi); } else { F[8] = 0; F[9] = 0; }
      F[10] = 0; F[11] = 0; F[12] = 0; F[13] = 0; F[14] = 0;
      if (a0 !== undefined) {
        const sweep = a1 - a0;
        F[10] = sweep <= PI_ ? 1 : 2;
        F[11] = cos(a0) * rx; F[12] = sin(a0) * ry; F[13] = cos(a1) * rx; F[14] = sin(a1) * ry;
      }
      const hx = sqrtN((m[0] * rx) * (m[0] * rx) + (m[2] * ry) * (m[2] * ry));
      const hy = sqrtN((m[1] * rx) * (m[1] * rx) + (m[3] * ry) * (m[3] * ry));
      F[15] = floor(pcx - hx) - 1; F[16] = floor(pcy - hy) - 1; F[17] = floor(pcx + hx) + 2; F[18] = floor(pcy + hy) + 2;
      this.use(); N.ellipse(m[at], m[at + 1], m[at + 2], m[at + 3]);
    }
    ellipseShape(cx, cy, rx, ry, a0, a1, pie) {
      const S = this.S;
      if (S[S_DOFILL]) this.ellipsePrim(cx, cy, rx, ry, 0, 0, a0, a1, S_FILL);
      if (S[S_DOSTROKE] && S[S_SW] > 0) {
        const hw = this.halfWidth(!S[S_DOFILL]);
        this.ellipsePrim(cx, cy, rx + hw, ry + hw, rx - hw, ry - hw, a0, a1, S_STROKE);
        if (pie && a0 !== undefined) {
          this.segment(cx, cy, cx + cos(a0) * rx, cy + sin(a0) * ry, hw, S_STROKE);
          this.segment(cx, cy, cx + cos(a1) * rx, cy + sin(a1) * ry, hw, S_STROKE);
        }
      }
    }
    // shapes
    rect(x, y, w, h) {
      if (h === undefined) h = w;
      x = +x; y = +y; w = +w; h = +h;
      const m = this.S;
      if (m[S_RECTM] !== 0) {
        const b = modeBox(m[S_RECTM], x, y, w, h);
        x = b[0]; y = b[1]; w = b[2]; h = b[3];
      }
      if (m[S_DOFILL]) { // fillPoly of the four corners, without the arrays
        const x1 = x + w, y1 = y + h;
        F[0] = m[0] * x + m[2] * y + m[4]; F[1] = m[1] * x + m[3] * y + m[5];
        F[2] = m[0] * x1 + m[2] * y + m[4]; F[3] = m[1] * x1 + m[3] * y + m[5];
        F[4] = m[0] * x1 + m[2] * y1 + m[4]; F[5] = m[1] * x1 + m[3] * y1 + m[5];
        F[6] = m[0] * x + m[2] * y1 + m[4]; F[7] = m[1] * x + m[3] * y1 + m[5];
        this.use(); N.poly(4, m[S_FILL], m[S_FILL + 1], m[S_FILL + 2], m[S_FILL + 3]);
      }
      if (m[S_DOSTROKE] && m[S_SW] > 0) this.outline([x, y, x + w, y, x + w, y + h, x, y + h], true);
    }
    square(x, y, s) { this.rect(x, y, s, s); }
    ellipse(x, y, w, h) {
      if (h === undefined) h = w;
      const b = modeBox(this.S[S_ELLIPSEM], +x, +y, +w, +h);
      this.ellipseShape(b[0] + b[2] / 2, b[1] + b[3] / 2, absN(b[2]) / 2, absN(b[3]) / 2);
    }
    circle(x, y, d) { this.ellipse(x, y, d, d); }
    use() { if (current !== this) { N.target(this.id); current = this; } }
    arc(x, y, w, h, start, stop, mode) {
      const b = modeBox(this.S[S_ELLIPSEM], +x, +y, +w, +h);
      x = b[0]; y = b[1]; w = b[2]; h = b[3];
      let a0 = this.ang(+start), a1 = this.ang(+stop);
      if (a1 - a0 >= TWO_PI_ || a1 - a0 <= -TWO_PI_) return this.ellipseShape(x + w / 2, y + h / 2, absN(w) / 2, absN(h) / 2);
      a0 = ((a0 % TWO_PI_) + TWO_PI_) % TWO_PI_; a1 = ((a1 % TWO_PI_) + TWO_PI_) % TWO_PI_;
      if (a1 <= a0) a1 += TWO_PI_;
      this.ellipseShape(x + w / 2, y + h / 2, absN(w) / 2, absN(h) / 2, a0, a1, mode === "pie");
    }
    line(x0, y0, x1, y1) {
      const S = this.S;
      if (!S[S_DOSTROKE] || !(S[S_SW] > 0)) return;
      this.segment(+x0, +y0, +x1, +y1, this.halfWidth(true), S_STROKE);
    }
    point(x, y) {
      if (typeof x === "object") { y = x.y; x = x.x; }
      const S = this.S;
      if (!S[S_DOSTROKE] || !(S[S_SW] > 0)) return;
      const hw = this.halfWidth(true);
      if (hw * this.pixelScale() >= 1) this.ellipsePrim(+x, +y, hw, hw, 0, 0, undefined, undefined, S_STROKE);
      else this.fillPoly([x - hw, y - hw, +x + hw, y - hw, +x + hw, +y + hw, x - hw, +y + hw], S_STROKE);
    }
    triangle(x0, y0, x1, y1, x2, y2) { this.shapePoly([+x0, +y0, +x1, +y1, +x2, +y2], true); }
    quad(x0, y0, x1, y1, x2, y2, x3, y3) { this.shapePoly([+x0, +y0, +x1, +y1, +x2, +y2, +x3, +y3], true); }
    beginShape(kind) { this.shape = { kind: kind === undefined ? null : kind, pts: [] }; }
    vertex(x, y) { if (this.shape) this.shape.pts.push(+x, +y); }
    endShape(mode) {
      const s = this.shape;
      this.shape = null;
      if (!s) return;
      const p = s.pts, n = p.length / 2, k = s.kind;
      const sub = (idx) => idx.flatMap((i) => [p[2 * i], p[2 * i + 1]]);
      if (k === null) return this.shapePoly(p, mode === "close");
      if (k === 0) { for (let i = 0; i < n; i++) this.point(p[2 * i], p[2 * i + 1]); return; }
      if (k === 1) { for (let i = 0; i + 1 < n; i += 2) this.line(p[2 * i], p[2 * i + 1], p[2 * i + 2], p[2 * i + 3]); return; }
      if (k === 4) { for (let i = 0; i + 2 < n; i += 3) this.shapePoly(sub([i, i + 1, i + 2]), true); return; }
      if (k === 5) { for (let i = 0; i + 2 < n; i++) this.shapePoly(sub([i, i + 1, i + 2]), true); return; }
      if (k === 6) { for (let i = 1; i + 1 < n; i++) this.shapePoly(sub([0, i, i + 1]), true); return; }
      if (k === "quads") { for (let i = 0; i + 3 < n; i += 4) this.shapePoly(sub([i, i + 1, i + 2, i + 3]), true); return; }
      if (k === "quad_strip") { for (let i = 0; i + 3 < n; i += 2) this.shapePoly(sub([i, i + 1, i + 3, i + 2]), true); return; }
      throw new Error(`beginShape(${k}): unknown kind`);
    }
    image(img, x, y, w, h) {
      if (!(img instanceof Graphics)) unsupported("image() of anything but a createGraphics() buffer (loadImage)");
      const src = img._r;
      x = +x; y = +y;
      if (w === undefined) { w = src.width; h = src.height; }
      const b = modeBox(this.S[S_IMAGEM], x, y, +w, +h);
      x = b[0]; y = b[1]; w = b[2]; h = b[3];
      const m = this.S, det = m[0] * m[3] - m[1] * m[2];
      if (det === 0 || !(det - det === 0) || w === 0 || h === 0) return;
      // destination pixel -> local -> source pixel
      const ia = m[3] / det, ib = -m[2] / det, ic = -m[1] / det, id = m[0] / det;
      const kx = src.pw / w, ky = src.ph / h;
      F[0] = ia * kx; F[1] = ib * kx; F[2] = ic * ky; F[3] = id * ky;
      F[4] = (-(ia * m[4] + ib * m[5]) - x) * kx; F[5] = (-(ic * m[4] + id * m[5]) - y) * ky;
      const c = [this.px(x, y), this.px(x + w, y), this.px(x, y + h), this.px(x + w, y + h)];
      const xs = c.map((p) => p[0]), ys = c.map((p) => p[1]);
      F[6] = floor(M.min(...xs)) - 1; F[7] = floor(M.min(...ys)) - 1; F[8] = floor(M.max(...xs)) + 2; F[9] = floor(M.max(...ys)) + 2;
      this.use(); N.image(src.id);
    }
  }
  const BOX = [0, 0, 0, 0], BG = new Float64Array(4);
  function modeBox(mode, x, y, w, h) { // mode code -> corner x, y, w, h (in a shared array: read it at once)
    if (mode === 2) { x -= w / 2; y -= h / 2; }
    else if (mode === 3) { x -= w; y -= h; w *= 2; h *= 2; }
    else if (mode === 1) { const x0 = M.min(x, w), y0 = M.min(y, h); w = absN(w - x); h = absN(h - y); x = x0; y = y0; }
    BOX[0] = x; BOX[1] = y; BOX[2] = w; BOX[3] = h;
    return BOX;
  }
  function unsupported(name) {
    throw new Error(`${name} is not supported by puffgpu's p5 subset (see envs/js/p5.js for what is)`);
  }

  let main = new Renderer(0, PW, PH, 100, 100);
  current = null;

  class Graphics {
    constructor(w, h) {
      const sx = main.S[S_BASE], sy = main.S[S_BASE + 3];
      const pw = M.max(1, M.ceil(w * sx)), ph = M.max(1, M.ceil(h * sy));
      this._r = new Renderer(N.canvas(pw, ph), pw, ph, w, h);
      this.width = w; this.height = h;
    }
  }
  const RMETHODS = ["translate", "scale", "rotate", "applyMatrix", "resetMatrix", "shearX", "shearY", "push", "pop",
    "fill", "noFill", "stroke", "noStroke", "strokeWeight", "colorMode", "background", "clear", "rect", "square",
    "ellipse", "circle", "arc", "line", "point", "triangle", "quad", "beginShape", "vertex", "endShape", "image"];
  for (const name of RMETHODS) {
    const fn = Renderer.prototype[name];
    Graphics.prototype[name] = function () { return fn.apply(this._r, arguments); };
    G[name] = function () { return fn.apply(main, arguments); };
  }
  // the most frequent calls without `arguments` (QuickJS builds that object on every call)
  G.fill = (a, b, c, d) => main.fill(a, b, c, d);
  G.stroke = (a, b, c, d) => main.stroke(a, b, c, d);
  G.noFill = () => { main.S[S_DOFILL] = 0; };
  G.noStroke = () => { main.S[S_DOSTROKE] = 0; };
  G.rect = (x, y, w, h) => main.rect(x, y, w, h);
  G.ellipse = (x, y, w, h) => main.ellipse(x, y, w, h);
  G.circle = (x, y, d) => main.ellipse(x, y, d, d);
  G.background = (a, b, c, d) => main.background(a, b, c, d);
  G.push = () => main.push();
  G.pop = () => main.pop();
  G.translate = (x, y) => main.translate(x, y);
  G.line = (a, b, c, d) => main.line(a, b, c, d);
  const MODES = { rectMode: [S_RECTM, modeCode], ellipseMode: [S_ELLIPSEM, modeCode], imageMode: [S_IMAGEM, modeCode],
    angleMode: [S_ANGLEM, (m) => (m === "degrees" ? 1 : 0)] };
  for (const name in MODES) {
    const [slot, code] = MODES[name];
    Graphics.prototype[name] = function (m) { this._r.S[slot] = code(m); };
    G[name] = (m) => { main.S[slot] = code(m); };
  }
  const NOOPS = ["textSize", "textAlign", "textFont", "textStyle", "textLeading", "text", "strokeCap", "strokeJoin",
    "smooth", "noSmooth", "tint", "noTint", "frameRate", "noLoop", "loop", "redraw", "cursor", "noCursor", "print",
    "blendMode", "describe", "remove", "resizeCanvas"];
  for (const name of NOOPS) {
    Graphics.prototype[name] = function () {};
    G[name] = () => {};
  }
  G.frameRate = () => 60; // p5's frameRate() reads the rate; setting it changes nothing here
  G.textWidth = (s) => String(s).length * main.textSizeV * 0.5;
  G.textAscent = () => main.textSizeV * 0.8;
  G.textDescent = () => main.textSizeV * 0.2;
  G.createGraphics = (w, h) => new Graphics(+w, +h);
  G.createCanvas = (w, h) => { main.setSize(+w, +h); G.width = +w; G.height = +h; return main; };
  G.color = function () { return new Color(makeColor(main, arguments)); };
  G.lerpColor = (c1, c2, t) => {
    t = M.max(0, M.min(1, t));
    return new Color(c1.levels.map((v, i) => v + (c2.levels[i] - v) * t));
  };
  G.red = (c) => (c instanceof Color ? c : G.color(c)).levels[0];
  G.green = (c) => (c instanceof Color ? c : G.color(c)).levels[1];
  G.blue = (c) => (c instanceof Color ? c : G.color(c)).levels[2];
  G.alpha = (c) => (c instanceof Color ? c : G.color(c)).levels[3];
  G.brightness = (c) => { const l = (c instanceof Color ? c : G.color(c)).levels; return M.max(l[0], l[1], l[2]) / 255 * 100; };

  // ---- p5 math ----------------------------------------------------------------------------
  Object.assign(G, {
    abs: absN, floor, ceil: M.ceil, sqrt: sqrtN, sq: (x) => x * x, pow, exp, log, sin, cos, tan, asin, acos, atan,
    atan2, fract: (x) => x - floor(x), sign: M.sign,
    round: (x, d) => { if (!d) return M.round(x); const k = powi(10, d); return M.round(x * k) / k; },
    min: (...a) => M.min(...(a.length === 1 && Array.isArray(a[0]) ? a[0] : a)),
    max: (...a) => M.max(...(a.length === 1 && Array.isArray(a[0]) ? a[0] : a)),
    dist: (...a) => a.length === 4 ? sqrtN((a[2] - a[0]) * (a[2] - a[0]) + (a[3] - a[1]) * (a[3] - a[1]))
      : sqrtN((a[3] - a[0]) * (a[3] - a[0]) + (a[4] - a[1]) * (a[4] - a[1]) + (a[5] - a[2]) * (a[5] - a[2])),
    mag: (x, y) => sqrtN(x * x + y * y),
    constrain: (v, lo, hi) => (v < lo ? lo : v > hi ? hi : v),
    lerp: (a, b, t) => a + (b - a) * t,
    norm: (v, a, b) => (v - a) / (b - a),
    map: (v, a, b, c, d, within) => {
      const r = c + (v - a) / (b - a) * (d - c);
      if (!within) return r;
      return c < d ? (r < c ? c : r > d ? d : r) : (r < d ? d : r > c ? c : r);
    },
    radians: (d) => d * PI_ / 180, degrees: (r) => r * 180 / PI_,
    int: (x) => (typeof x === "string" ? parseInt(x, 10) : x | 0), float: (x) => parseFloat(x), str: (x) => String(x),
    boolean: (x) => !!x, nf: (x, l, r) => (r === undefined ? String(x) : (+x).toFixed(r)),
    millis: () => G.frameCount * 1000 / 60,
    second: () => floor(G.frameCount / 60) % 60, minute: () => 0, hour: () => 0,
    random: (a, b) => {
      const r = rnd();
      if (a === undefined) return r;
      if (Array.isArray(a)) return a[floor(r * a.length)];
      if (b === undefined) return r * a;
      return a + r * (b - a);
    },
    randomSeed: (s) => { RS[0] = s >>> 0; },
    randomGaussian: (mean = 0, sd = 1) => {
      let u = 0;
      while (u === 0) u = rnd();
      return mean + sd * sqrtN(-2 * log(u)) * cos(TWO_PI_ * rnd());
    },
    shuffle: (arr, inPlace) => {
      const a = inPlace ? arr : arr.slice();
      for (let i = a.length - 1; i > 0; i--) { const j = floor(rnd() * (i + 1)); const t = a[i]; a[i] = a[j]; a[j] = t; }
      return a;
    },
  });

  // In the env, the frequent calls on the picture run as C functions (envs/js/p5native.h) that
  // compute what these do; these stay their twins for the inputs C leaves to JS.
  if (N.p5) {
    const twins = { sin, cos, tan, asin, acos, atan, atan2, exp, log, pow, mathRandom: rnd };
    for (const k of ["fill", "stroke", "noFill", "noStroke", "strokeWeight", "background", "rect", "square", "ellipse",
      "circle", "line", "triangle", "quad", "translate", "rotate", "scale", "push", "pop", "resetMatrix", "random"]) twins[k] = G[k];
    N.p5(twins);
  }

  // ---- p5.Vector (2D/3D) -----------------------------------------------------------------
  class Vector {
    constructor(x = 0, y = 0, z = 0) { this.x = x; this.y = y; this.z = z; }
    set(x, y, z) { if (x instanceof Vector) { this.x = x.x; this.y = x.y; this.z = x.z; } else { this.x = x || 0; this.y = y || 0; this.z = z || 0; } return this; }
    copy() { return new Vector(this.x, this.y, this.z); }
    add(x, y, z) { if (x instanceof Vector) { y = x.y; z = x.z; x = x.x; } this.x += x || 0; this.y += y || 0; this.z += z || 0; return this; }
    sub(x, y, z) { if (x instanceof Vector) { y = x.y; z = x.z; x = x.x; } this.x -= x || 0; this.y -= y || 0; this.z -= z || 0; return this; }
    mult(k) { this.x *= k; this.y *= k; this.z *= k; return this; }
    div(k) { this.x /= k; this.y /= k; this.z /= k; return this; }
    magSq() { return this.x * this.x + this.y * this.y + this.z * this.z; }
    mag() { return sqrtN(this.magSq()); }
    dot(v) { return this.x * v.x + this.y * v.y + this.z * v.z; }
    dist(v) { return v.copy().sub(this).mag(); }
    normalize() { const m = this.mag(); if (m > 0) this.div(m); return this; }
    limit(k) { const m = this.magSq(); if (m > k * k) this.div(sqrtN(m)).mult(k); return this; }
    setMag(k) { return this.normalize().mult(k); }
    heading() { return atan2(this.y, this.x); }
    rotate(a) { a = main.ang(a); const c = cos(a), s = sin(a); const x = this.x * c - this.y * s; this.y = this.x * s + this.y * c; this.x = x; return this; }
    lerp(v, t) { this.x += (v.x - this.x) * t; this.y += (v.y - this.y) * t; this.z += (v.z - this.z) * t; return this; }
    array() { return [this.x, this.y, this.z]; }
    static add(a, b) { return a.copy().add(b); }
    static sub(a, b) { return a.copy().sub(b); }
    static mult(a, k) { return a.copy().mult(k); }
    static div(a, k) { return a.copy().div(k); }
    static dist(a, b) { return a.dist(b); }
    static dot(a, b) { return a.dot(b); }
    static fromAngle(a, len = 1) { return new Vector(len * cos(a), len * sin(a), 0); }
    static random2D() { return Vector.fromAngle(rnd() * TWO_PI_); }
  }
  G.createVector = (x, y, z) => new Vector(x, y, z);
  G.p5 = { Vector, Color, Graphics };

  // ---- calls outside the subset: an error that names them ----------------------------------
  for (const name of ["loadImage", "loadFont", "loadSound", "loadJSON", "loadStrings", "loadTable", "loadModel",
    "loadShader", "createImage", "createImg", "createButton", "createSlider", "createInput", "createSelect",
    "createCheckbox", "createDiv", "createP", "createSpan", "createElement", "createCapture", "createVideo",
    "createAudio", "select", "selectAll", "saveCanvas", "saveFrames", "save", "get", "set", "loadPixels",
    "updatePixels", "filter", "erase", "noErase", "curve", "bezier", "bezierVertex", "curveVertex",
    "quadraticVertex", "beginContour", "endContour", "texture", "box", "sphere", "plane", "cylinder", "cone",
    "torus", "camera", "perspective", "ortho", "orbitControl", "normalMaterial", "ambientLight", "pointLight",
    "directionalLight", "createShader", "shader", "noise", "noiseSeed", "noiseDetail", "storeItem", "getItem",
    "httpGet", "httpPost", "createFileInput", "fullscreen", "requestPointerLock", "createFramebuffer",
    "clip", "drawingContext"]) {
    G[name] = () => unsupported(`${name}()`);
  }

  // ---- input and frame globals --------------------------------------------------------------
  const down = new Set();
  Object.assign(G, {
    width: 100, height: 100, frameCount: 0, deltaTime: 1000 / 60, focused: true,
    mouseX: 0, mouseY: 0, pmouseX: 0, pmouseY: 0, winMouseX: 0, winMouseY: 0, mouseIsPressed: false,
    mouseButton: "left", movedX: 0, movedY: 0, keyIsPressed: false, key: "", keyCode: 0,
    windowWidth: 400, windowHeight: 400, displayWidth: 400, displayHeight: 400,
    keyIsDown: (code) => down.has(code),
    pixelDensity: () => 1, displayDensity: () => 1,
  });

  // Clocks count frames (60 a second), so a game timed by them replays identically.
  const T0 = 1767225600000; // 2026-01-01
  G.Date.now = () => T0 + G.frameCount * 1000 / 60;
  if (G.performance && typeof G.performance.now === "function") {
    try { G.performance.now = () => G.frameCount * 1000 / 60; } catch (e) { /* read-only in some browsers */ }
  }

  // ---- the host contract ---------------------------------------------------------------------
  const STATES = { PLAYING: 0, WIN: 1, GAMEOVER: 2, EXIT: 3 };
  function parseActions(text) { // "0 | 37 | 39 | ... | p32 | 37 p32" -> [[held], [pressed]] per action
    return text.split("|").map((a) => {
      const held = [], pressed = [];
      for (const t of a.trim().split(/\s+/)) {
        if (t === "" || t === "0" || t === "-") continue;
        if (t[0] === "p") pressed.push(+t.slice(1)); else held.push(+t);
      }
      return [held, pressed];
    });
  }
  const ACTIONS = parseActions(N.actions);
  function need(name) {
    if (typeof G[name] !== "function") {
      throw new Error(`${GAME} defines no ${name}() function; a game defines setup() and draw() (p5.js) and ` +
        "resetGame(seed) and getGameState() returning {score, lives, gameState} (the RL contract)");
    }
    return G[name];
  }
  function frame() {
    G.frameCount += 1;
    main.resetMatrix();
    main.shape = null;
    const draw = G.draw; // by name: need() looks it up by a computed key, which costs a string's atom
    (typeof draw === "function" ? draw : need("draw"))();
    current = null;
  }
  // getGameState()'s result into OUT (the env's C host reads plain objects itself and hands
  // anything else to this, so both give the same numbers and errors)
  function state(s) {
    if (s === null || typeof s !== "object") throw new TypeError(`getGameState() must return {score, lives, gameState}, got ${s}`);
    const score = +s.score;
    if (!(score - score === 0)) throw new TypeError(`getGameState().score must be a finite number, got ${s.score}`);
    OUT[0] = score;
    OUT[1] = +s.lives || 0;
    const code = STATES[s.gameState];
    OUT[2] = code === undefined ? 0 : code;
  }
  function readState() {
    const get = G.getGameState;
    state((typeof get === "function" ? get : need("getGameState"))());
  }
  function seedAll(seed) { RS[0] = seed >>> 0; }
  // The action's keys for this frame (the set is replaced); with press, its press keys are down
  // too and keyPressed() runs once for each.
  function keys(action, press) {
    const act = ACTIONS[action] || ACTIONS[0], held = act[0], pressed = press ? act[1] : [];
    down.clear();
    for (let i = 0; i < held.length; i++) down.add(held[i]);
    for (let i = 0; i < pressed.length; i++) down.add(pressed[i]);
    G.keyIsPressed = down.size > 0;
    const onPress = typeof G.keyPressed === "function" ? G.keyPressed : null;
    for (let i = 0; i < pressed.length; i++) {
      G.keyCode = pressed[i]; G.key = keyName(pressed[i]);
      if (onPress) onPress();
    }
    if (pressed.length === 0 && held.length > 0) { G.keyCode = held[held.length - 1]; G.key = keyName(G.keyCode); }
  }
  // The env steps frames in C (envs/js/jsenv.h, js_frame) what step() and hold() do here: it
  // takes the picture renderer (for main.shape) and installs its keyIsDown; the rest of the
  // contract stays here for what C leaves to JS (need, state, tick, keyName).
  if (N.host) N.host(main);
  G.__puf = {
    load() {
      need("draw"); need("resetGame"); need("getGameState");
      seedAll(0);
      if (typeof G.setup === "function") G.setup();
      G.frameCount = 0;
      G.resetGame(0);
      frame();
      readState();
    },
    reset(seed) {
      seedAll(seed);
      down.clear(); G.keyIsPressed = false;
      G.frameCount = 0;
      G.resetGame(seed);
      frame();
      readState();
    },
    step(action) { keys(action, true); frame(); readState(); },
    // a repeated frame of a frameskip: the same held keys, no press
    hold(action) { keys(action, false); frame(); readState(); },
    need, state, keyName,
    tick() { G.frameCount += 1; },
    actions: ACTIONS,
  };
})(globalThis);
