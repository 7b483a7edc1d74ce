// raster.js — the browser's __native for envs/js/p5.js: the same four drawing primitives as
// envs/js/jsenv.h (p5_poly, p5_ellipse, p5_image, p5_background), with the same arithmetic in
// the same order, so the page draws exactly the pixels the agent sees. Keep the two in step:
// a change to one is a change to both.
"use strict";

function makeNative(width, height, actions, game) {
  const fbuf = new ArrayBuffer(16384 * 8), obuf = new ArrayBuffer(4 * 8);
  const F = new Float64Array(fbuf);
  const canvases = [{ px: new Uint8Array(width * height * 3), w: width, h: height, ch: 3 }];
  let target = 0;
  const finite = (v) => v - v === 0;

  function blend(c, x, y, r, g, b, a) {
    const p = c.px, i = (y * c.w + x) * c.ch;
    if (a >= 255) {
      p[i] = r; p[i + 1] = g; p[i + 2] = b;
      if (c.ch === 4) p[i + 3] = 255;
      return;
    }
    if (a <= 0) return;
    if (c.ch === 4 && p[i + 3] === 0) { p[i] = r; p[i + 1] = g; p[i + 2] = b; p[i + 3] = a; return; }
    const k = 255 - a;
    p[i] = Math.floor((r * a + p[i] * k + 127) / 255);
    p[i + 1] = Math.floor((g * a + p[i + 1] * k + 127) / 255);
    p[i + 2] = Math.floor((b * a + p[i + 2] * k + 127) / 255);
    if (c.ch === 4) p[i + 3] = a + Math.floor((p[i + 3] * k + 127) / 255);
  }
  function span(c, y, x0, x1, r, g, b, a) {
    if (y < 0 || y >= c.h) return;
    if (x0 < 0) x0 = 0;
    if (x1 > c.w) x1 = c.w;
    for (let x = x0; x < x1; x++) blend(c, x, y, r, g, b, a);
  }
  const ints = (v) => (v === v && v > -2e9 && v < 2e9 ? Math.trunc(v) : 0);

  const xs = new Float64Array(512), dirs = new Int32Array(512);
  function poly(n, r, g, b, a) {
    n = ints(n); r = ints(r); g = ints(g); b = ints(b); a = ints(a);
    const c = canvases[target];
    if (n < 3) return;
    let ymin = F[1], ymax = F[1];
    for (let i = 0; i < n; i++) {
      const x = F[2 * i], y = F[2 * i + 1];
      if (!finite(x) || !finite(y)) return;
      if (y < ymin) ymin = y;
      if (y > ymax) ymax = y;
    }
    const y0 = Math.max(Math.ceil(ymin - 0.5), 0), y1 = Math.min(Math.floor(ymax - 0.5), c.h - 1);
    for (let y = y0; y <= y1; y++) {
      const yc = y + 0.5;
      let m = 0;
      for (let i = 0; i < n && m < 512; i++) {
        const j = i + 1 === n ? 0 : i + 1;
        const ax = F[2 * i], ay = F[2 * i + 1], bx = F[2 * j], by = F[2 * j + 1];
        let d;
        if (ay <= yc && yc < by) d = 1;
        else if (by <= yc && yc < ay) d = -1;
        else continue;
        const x = ax + (yc - ay) * (bx - ax) / (by - ay);
        let k = m++;
        while (k > 0 && xs[k - 1] > x) { xs[k] = xs[k - 1]; dirs[k] = dirs[k - 1]; k--; }
        xs[k] = x;
        dirs[k] = d;
      }
      let wind = 0, start = 0;
      for (let k = 0; k < m; k++) {
        const before = wind;
        wind += dirs[k];
        if (before === 0 && wind !== 0) start = xs[k];
        else if (before !== 0 && wind === 0) {
          let lo = Math.ceil(start - 0.5), hi = Math.ceil(xs[k] - 0.5);
          if (lo < 0) lo = 0;
          if (hi > c.w) hi = c.w;
          if (lo < hi) span(c, y, lo, hi, r, g, b, a);
        }
      }
    }
  }

  function ellipse(r, g, b, a) {
    r = ints(r); g = ints(g); b = ints(b); a = ints(a);
    const c = canvases[target];
    const cx = F[0], cy = F[1], ia = F[2], ib = F[3], ic = F[4], id = F[5];
    const ku = F[6], kv = F[7], kui = F[8], kvi = F[9];
    const mode = Math.trunc(F[10]);
    const sx = F[11], sy = F[12], ex = F[13], ey = F[14];
    for (let i = 0; i < 19; i++) if (!finite(F[i])) return;
    const x0 = Math.trunc(Math.max(F[15], 0)), y0 = Math.trunc(Math.max(F[16], 0));
    const x1 = Math.trunc(Math.min(F[17], c.w)), y1 = Math.trunc(Math.min(F[18], c.h));
    const inner = kui !== 0 || kvi !== 0;
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const dx = x + 0.5 - cx, dy = y + 0.5 - cy;
        const u = ia * dx + ib * dy, v = ic * dx + id * dy;
        if (u * u * ku + v * v * kv > 1) continue;
        if (inner && u * u * kui + v * v * kvi < 1) continue;
        if (mode !== 0) {
          const cs = sx * v - sy * u, ce = u * ey - v * ex;
          if (mode === 1 ? !(cs >= 0 && ce >= 0) : (cs < 0 && ce < 0)) continue;
        }
        blend(c, x, y, r, g, b, a);
      }
    }
  }

  function image(src) {
    src = ints(src);
    if (src < 0 || src >= canvases.length || src === target) return;
    const dst = canvases[target], s = canvases[src];
    for (let i = 0; i < 10; i++) if (!finite(F[i])) return;
    const x0 = Math.trunc(Math.max(F[6], 0)), y0 = Math.trunc(Math.max(F[7], 0));
    const x1 = Math.trunc(Math.min(F[8], dst.w)), y1 = Math.trunc(Math.min(F[9], dst.h));
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const px = x + 0.5, py = y + 0.5;
        const sxf = Math.floor(F[0] * px + F[1] * py + F[4]), syf = Math.floor(F[2] * px + F[3] * py + F[5]);
        if (sxf < 0 || syf < 0 || sxf >= s.w || syf >= s.h) continue;
        const i = (syf * s.w + sxf) * s.ch;
        blend(dst, x, y, s.px[i], s.px[i + 1], s.px[i + 2], s.ch === 4 ? s.px[i + 3] : 255);
      }
    }
  }

  function background(r, g, b, a) {
    r = ints(r); g = ints(g); b = ints(b); a = ints(a);
    const c = canvases[target];
    for (let y = 0; y < c.h; y++) span(c, y, 0, c.w, r, g, b, a);
  }

  return {
    fbuf, obuf, width, height, actions, game,
    poly, ellipse, image, background,
    clear() { canvases[target].px.fill(0); },
    target(id) {
      id = ints(id);
      if (id < 0 || id >= canvases.length) throw new RangeError(`no canvas ${id}`);
      target = id;
    },
    canvas(w, h) {
      w = ints(w); h = ints(h);
      if (canvases.length >= 64) throw new RangeError("createGraphics: more than 63 buffers");
      if (w < 1 || h < 1 || w * h > (1 << 20)) throw new RangeError(`createGraphics: ${w} x ${h} pixels is out of range`);
      canvases.push({ px: new Uint8Array(w * h * 4), w, h, ch: 4 });
      return canvases.length - 1;
    },
    picture: () => canvases[0].px,
  };
}
