// mingru.wgsl — PufferLib 5.0's MinGRU layer, elementwise part (the matmul c = x·W_lᵀ runs before).
//
//   c = [ĥ | g | p] (three H-blocks of the layer's pre-activations)
//   z = σ(g);  h̃ = ĥ + 0.5 if ĥ ≥ 0 else σ(ĥ);  h_t = (1 − z)·h_{t−1} + z·h̃
//   s = σ(p);  y = s·h_t + (1 − s)·x            (carried state: h_t; output y feeds the next layer)
//   An agent whose terminal flag arrives with step t's observation starts step t from h = 0, and no
//   gradient flows into the state before the reset.
//
// Backward (reverse time, carrying dh; go = upstream gradient of y_t):
//   dp = go·(h_t − x)·s(1 − s);  dx = go·(1 − s)  (highway part; the matmul adds dc·W_l)
//   dh_tot = dh + go·s;  dg = dh_tot·(h̃ − h_{t−1})·z(1 − z)
//   dĥ = dh_tot·z if ĥ ≥ 0 else dh_tot·z·h̃(1 − h̃);  dh = dh_tot·(1 − z), 0 if terminal[t]
//
// Shapes (agent-major: row = r·T + t): c [rows, 3H], x/y/hs/dy/dx [rows, H], dc [rows, 3H],
// h0 [R, H] (the state before step 0), terminals [R·T] at a stride of terminals_stride floats (the
// TR_TERMINAL column of the rollout's transitions in the learner, 1 in the rollout step, which has T = 1).
// Two variants of each kernel, the same math (trainer/kernels/mingru.py declares them; one is picked per shape):
//   vec4    (mingru_step, mingru_scan_forward, mingru_scan_backward): 4 hidden units per invocation,
//           every tensor but terminals read as vec4 (H is a multiple of 8 and every offset a multiple of
//           4 floats; *_off fields are in floats): on lavapipe each load costs the same per lane whether
//           it moves one float or four. Workgroup WG = 32, grid (ceil(H/4/WG), R).
//   scalar  (the same names + _scalar): 1 hidden unit per invocation on the f32 views (c_f, x_f, …) of
//           the same tensors, workgroup WG_S = 64: on a GPU the scan then keeps R·H invocations in
//           flight (16K at the default minibatch) instead of R·H/4. Grid (ceil(H/WG_S), R).
//
// Bindings: c, x, h0, terminals, dy (reads); state, y, hs, dc, dx, snapshot (writes); then their f32
// views c_f, x_f, h0_f, dy_f (reads), state_f, y_f, hs_f, dc_f, dx_f, snapshot_f (writes); Params.
// A kernel's layout holds only the bindings it uses (trainer/gpu.py).
// The scan loops over T inside the invocation: T must stay below lavapipe's 65,535 loop
// iterations per invocation (the launcher refuses T > 4096).

struct Params {
    R: u32, T: u32, H: u32,
    snapshot: u32,  // mingru_step: 1 → also write the (reset) state before the step to `snapshot`
    terminals_stride: u32,  // floats between consecutive rows' terminal flags (the rollout's transition rows)
    c_off: u32, x_off: u32, h0_off: u32, terminals_off: u32, dy_off: u32,
    state_off: u32, y_off: u32, hs_off: u32, dc_off: u32, dx_off: u32, snapshot_off: u32,
    c_f_off: u32, x_f_off: u32, h0_f_off: u32, dy_f_off: u32,
    state_f_off: u32, y_f_off: u32, hs_f_off: u32, dc_f_off: u32, dx_f_off: u32, snapshot_f_off: u32,
}

@group(0) @binding(0) var<storage, read> c: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> h0: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> terminals: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> state: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> hs: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> dc: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> dx: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> snapshot: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read> c_f: array<f32>;
@group(0) @binding(12) var<storage, read> x_f: array<f32>;
@group(0) @binding(13) var<storage, read> h0_f: array<f32>;
@group(0) @binding(14) var<storage, read> dy_f: array<f32>;
@group(0) @binding(15) var<storage, read_write> state_f: array<f32>;
@group(0) @binding(16) var<storage, read_write> y_f: array<f32>;
@group(0) @binding(17) var<storage, read_write> hs_f: array<f32>;
@group(0) @binding(18) var<storage, read_write> dc_f: array<f32>;
@group(0) @binding(19) var<storage, read_write> dx_f: array<f32>;
@group(0) @binding(20) var<storage, read_write> snapshot_f: array<f32>;
@group(0) @binding(21) var<uniform> p: Params;

override WG: u32 = 32u;
override WG_S: u32 = 64u;

fn sigmoid(v: vec4<f32>) -> vec4<f32> { return 1.0 / (1.0 + exp(-v)); }

// h̃ = g(ĥ): continuous at 0, always > 0
fn htilde(hh: vec4<f32>) -> vec4<f32> { return select(sigmoid(hh), hh + 0.5, hh >= vec4(0.0)); }

// h_t = (1 − z)·h_{t−1} + z·h̃ from the pre-activations at vec4 index cb (blocks H4 apart)
fn next_state(cb: u32, H4: u32, h_prev: vec4<f32>) -> vec4<f32> {
    return mix(h_prev, htilde(c[cb]), sigmoid(c[cb + H4]));
}

// y = s·h + (1 − s)·x, the highway output
fn highway(cb: u32, H4: u32, h: vec4<f32>, xv: vec4<f32>) -> vec4<f32> {
    return mix(xv, h, sigmoid(c[cb + 2u * H4]));
}

// vec4 index of float offset `off` plus `i` vec4s (offsets are multiples of 4 floats)
fn v(off: u32, i: u32) -> u32 { return (off >> 2u) + i; }

// rollout: one step for N = R agents (T = 1); state [R, H] is read and updated in place
@compute @workgroup_size(WG, 1, 1)
fn mingru_step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    let H4 = p.H / 4u;
    if (j >= H4 || r >= p.R) { return; }
    let si = v(p.state_off, r * H4 + j);
    var h = state[si];
    if (terminals[p.terminals_off + r * p.terminals_stride] != 0.0) { h = vec4(0.0); }
    if (p.snapshot != 0u) { snapshot[v(p.snapshot_off, r * H4 + j)] = h; }
    let cb = v(p.c_off, r * 3u * H4 + j);
    h = next_state(cb, H4, h);
    state[si] = h;
    y[v(p.y_off, r * H4 + j)] = highway(cb, H4, h, x[v(p.x_off, r * H4 + j)]);
}

// training forward over the horizon: saves h_t (hs) for the backward pass
@compute @workgroup_size(WG, 1, 1)
fn mingru_scan_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    let H4 = p.H / 4u; let T = p.T;
    if (j >= H4 || r >= p.R) { return; }
    var h = h0[v(p.h0_off, r * H4 + j)];
    for (var t = 0u; t < T; t++) {
        let row = r * T + t;
        if (terminals[p.terminals_off + row * p.terminals_stride] != 0.0) { h = vec4(0.0); }
        let cb = v(p.c_off, row * 3u * H4 + j);
        h = next_state(cb, H4, h);
        hs[v(p.hs_off, row * H4 + j)] = h;
        y[v(p.y_off, row * H4 + j)] = highway(cb, H4, h, x[v(p.x_off, row * H4 + j)]);
    }
}

// training backward over the horizon: dc (all three blocks) and the highway part of dx
@compute @workgroup_size(WG, 1, 1)
fn mingru_scan_backward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    let H4 = p.H / 4u; let T = p.T;
    if (j >= H4 || r >= p.R) { return; }
    var dh = vec4(0.0);
    // h_t of the step being differentiated, carried backwards so each state is loaded once
    var h = hs[v(p.hs_off, (r * T + T - 1u) * H4 + j)];
    for (var i = 0u; i < T; i++) {
        let t = T - 1u - i;
        let row = r * T + t;
        let reset = terminals[p.terminals_off + row * p.terminals_stride] != 0.0;
        var h_prev = vec4(0.0);
        if (t == 0u) {
            h_prev = h0[v(p.h0_off, r * H4 + j)];
        } else {
            h_prev = hs[v(p.hs_off, (row - 1u) * H4 + j)];
        }
        let hp = select(h_prev, vec4(0.0), reset);  // the state this step started from
        let cb = v(p.c_off, row * 3u * H4 + j);
        let hh = c[cb];
        let zg = sigmoid(c[cb + H4]);
        let s = sigmoid(c[cb + 2u * H4]);
        let ht = htilde(hh);
        let go = dy[v(p.dy_off, row * H4 + j)];
        let dh_tot = dh + go * s;
        let dht = select(ht * (1.0 - ht), vec4(1.0), hh >= vec4(0.0));
        let db = v(p.dc_off, row * 3u * H4 + j);
        dc[db] = dh_tot * zg * dht;
        dc[db + H4] = dh_tot * (ht - hp) * zg * (1.0 - zg);
        dc[db + 2u * H4] = go * (h - x[v(p.x_off, row * H4 + j)]) * s * (1.0 - s);
        dx[v(p.dx_off, row * H4 + j)] = go * (1.0 - s);
        dh = select(dh_tot * (1.0 - zg), vec4(0.0), reset);
        h = h_prev;
    }
}

// ---------------------------------------------------------------- scalar variants (1 unit per invocation)

fn sigmoid1(v: f32) -> f32 { return 1.0 / (1.0 + exp(-v)); }
fn htilde1(hh: f32) -> f32 { return select(sigmoid1(hh), hh + 0.5, hh >= 0.0); }
fn next_state1(cb: u32, H: u32, h_prev: f32) -> f32 { return mix(h_prev, htilde1(c_f[cb]), sigmoid1(c_f[cb + H])); }
fn highway1(cb: u32, H: u32, h: f32, xv: f32) -> f32 { return mix(xv, h, sigmoid1(c_f[cb + 2u * H])); }

@compute @workgroup_size(WG_S, 1, 1)
fn mingru_step_scalar(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    let H = p.H;
    if (j >= H || r >= p.R) { return; }
    let si = p.state_f_off + r * H + j;
    var h = state_f[si];
    if (terminals[p.terminals_off + r * p.terminals_stride] != 0.0) { h = 0.0; }
    if (p.snapshot != 0u) { snapshot_f[p.snapshot_f_off + r * H + j] = h; }
    let cb = p.c_f_off + r * 3u * H + j;
    h = next_state1(cb, H, h);
    state_f[si] = h;
    y_f[p.y_f_off + r * H + j] = highway1(cb, H, h, x_f[p.x_f_off + r * H + j]);
}

@compute @workgroup_size(WG_S, 1, 1)
fn mingru_scan_forward_scalar(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    let H = p.H; let T = p.T;
    if (j >= H || r >= p.R) { return; }
    var h = h0_f[p.h0_f_off + r * H + j];
    for (var t = 0u; t < T; t++) {
        let row = r * T + t;
        if (terminals[p.terminals_off + row * p.terminals_stride] != 0.0) { h = 0.0; }
        let cb = p.c_f_off + row * 3u * H + j;
        h = next_state1(cb, H, h);
        hs_f[p.hs_f_off + row * H + j] = h;
        y_f[p.y_f_off + row * H + j] = highway1(cb, H, h, x_f[p.x_f_off + row * H + j]);
    }
}

@compute @workgroup_size(WG_S, 1, 1)
fn mingru_scan_backward_scalar(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    let H = p.H; let T = p.T;
    if (j >= H || r >= p.R) { return; }
    var dh = 0.0;
    var h = hs_f[p.hs_f_off + (r * T + T - 1u) * H + j];
    for (var i = 0u; i < T; i++) {
        let t = T - 1u - i;
        let row = r * T + t;
        let reset = terminals[p.terminals_off + row * p.terminals_stride] != 0.0;
        var h_prev = 0.0;
        if (t == 0u) {
            h_prev = h0_f[p.h0_f_off + r * H + j];
        } else {
            h_prev = hs_f[p.hs_f_off + (row - 1u) * H + j];
        }
        let hp = select(h_prev, 0.0, reset);
        let cb = p.c_f_off + row * 3u * H + j;
        let hh = c_f[cb];
        let zg = sigmoid1(c_f[cb + H]);
        let s = sigmoid1(c_f[cb + 2u * H]);
        let ht = htilde1(hh);
        let go = dy_f[p.dy_f_off + row * H + j];
        let dh_tot = dh + go * s;
        let dht = select(ht * (1.0 - ht), 1.0, hh >= 0.0);
        let db = p.dc_f_off + row * 3u * H + j;
        dc_f[db] = dh_tot * zg * dht;
        dc_f[db + H] = dh_tot * (ht - hp) * zg * (1.0 - zg);
        dc_f[db + 2u * H] = go * (h - x_f[p.x_f_off + row * H + j]) * s * (1.0 - s);
        dx_f[p.dx_f_off + row * H + j] = go * (1.0 - s);
        dh = select(dh_tot * (1.0 - zg), 0.0, reset);
        h = h_prev;
    }
}
