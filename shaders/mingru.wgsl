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
// h0 [R, H] (the state before step 0), terminals [R, T]; the rollout step has T = 1.
//
// Bindings: c, x, h0, terminals, dy (reads); state, y, hs, dc, dx, snapshot (writes); Params.
// Dispatch: one invocation per (agent row r, hidden unit j); workgroup WG along j,
//   grid (ceil(H/WG), R). The scan loops over T inside the invocation: T must stay below
//   lavapipe's 65,535 loop iterations per invocation (the launcher refuses T > 4096).

struct Params {
    R: u32, T: u32, H: u32,
    snapshot: u32,  // mingru_step: 1 → also write the (reset) state before the step to `snapshot`
    c_off: u32, x_off: u32, h0_off: u32, terminals_off: u32, dy_off: u32,
    state_off: u32, y_off: u32, hs_off: u32, dc_off: u32, dx_off: u32, snapshot_off: u32,
}

@group(0) @binding(0) var<storage, read> c: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> h0: array<f32>;
@group(0) @binding(3) var<storage, read> terminals: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> state: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
@group(0) @binding(7) var<storage, read_write> hs: array<f32>;
@group(0) @binding(8) var<storage, read_write> dc: array<f32>;
@group(0) @binding(9) var<storage, read_write> dx: array<f32>;
@group(0) @binding(10) var<storage, read_write> snapshot: array<f32>;
@group(0) @binding(11) var<uniform> p: Params;

override WG: u32 = 64u;

fn sigmoid(v: f32) -> f32 { return 1.0 / (1.0 + exp(-v)); }

// h̃ = g(ĥ): continuous at 0, always > 0
fn htilde(hh: f32) -> f32 { return select(sigmoid(hh), hh + 0.5, hh >= 0.0); }

// One step of one unit: returns (h_t, y_t)
fn cell(hh: f32, g: f32, pp: f32, xv: f32, h_prev: f32) -> vec2<f32> {
    let zg = sigmoid(g);
    let h = mix(h_prev, htilde(hh), zg);  // (1 − z)·h_{t−1} + z·h̃
    let s = sigmoid(pp);
    return vec2(h, mix(xv, h, s));        // s·h + (1 − s)·x
}

// rollout: one step for N = R agents (T = 1); state [R, H] is read and updated in place
@compute @workgroup_size(WG, 1, 1)
fn mingru_step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    if (j >= p.H || r >= p.R) { return; }
    let H = p.H;
    let si = p.state_off + r * H + j;
    let h_prev = select(state[si], 0.0, terminals[p.terminals_off + r] != 0.0);
    if (p.snapshot != 0u) { snapshot[p.snapshot_off + r * H + j] = h_prev; }
    let cb = p.c_off + r * 3u * H + j;
    let hy = cell(c[cb], c[cb + H], c[cb + 2u * H], x[p.x_off + r * H + j], h_prev);
    state[si] = hy.x;
    y[p.y_off + r * H + j] = hy.y;
}

// training forward over the horizon: saves h_t (hs) for the backward pass
@compute @workgroup_size(WG, 1, 1)
fn mingru_scan_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    if (j >= p.H || r >= p.R) { return; }
    let H = p.H; let T = p.T;
    var h = h0[p.h0_off + r * H + j];
    for (var t = 0u; t < T; t++) {
        let row = r * T + t;
        if (terminals[p.terminals_off + row] != 0.0) { h = 0.0; }
        let cb = p.c_off + row * 3u * H + j;
        let hy = cell(c[cb], c[cb + H], c[cb + 2u * H], x[p.x_off + row * H + j], h);
        h = hy.x;
        hs[p.hs_off + row * H + j] = h;
        y[p.y_off + row * H + j] = hy.y;
    }
}

// training backward over the horizon: dc (all three blocks) and the highway part of dx
@compute @workgroup_size(WG, 1, 1)
fn mingru_scan_backward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x; let r = gid.y;
    if (j >= p.H || r >= p.R) { return; }
    let H = p.H; let T = p.T;
    var dh = 0.0;
    for (var i = 0u; i < T; i++) {
        let t = T - 1u - i;
        let row = r * T + t;
        let reset = terminals[p.terminals_off + row] != 0.0;
        var h_prev = 0.0;
        if (reset) {
            h_prev = 0.0;
        } else if (t == 0u) {
            h_prev = h0[p.h0_off + r * H + j];
        } else {
            h_prev = hs[p.hs_off + (row - 1u) * H + j];
        }
        let cb = p.c_off + row * 3u * H + j;
        let hh = c[cb]; let g = c[cb + H]; let pp = c[cb + 2u * H];
        let xv = x[p.x_off + row * H + j];
        let h = hs[p.hs_off + row * H + j];
        let go = dy[p.dy_off + row * H + j];
        let s = sigmoid(pp);
        let zg = sigmoid(g);
        let ht = htilde(hh);
        let dh_tot = dh + go * s;
        let dht = select(ht * (1.0 - ht), 1.0, hh >= 0.0);
        let db = p.dc_off + row * 3u * H + j;
        dc[db] = dh_tot * zg * dht;
        dc[db + H] = dh_tot * (ht - h_prev) * zg * (1.0 - zg);
        dc[db + 2u * H] = go * (h - xv) * s * (1.0 - s);
        dx[p.dx_off + row * H + j] = go * (1.0 - s);
        dh = select(dh_tot * (1.0 - zg), 0.0, reset);
    }
}
