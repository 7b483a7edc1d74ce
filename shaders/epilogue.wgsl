// epilogue.wgsl — the store every matmul kernel ends with (included by matmul.wgsl and
// matmul_subgroup.wgsl, whose Params and bindings y, z it uses):
//
//   Y[m, n] = alpha·v + beta·Z[m, n]   (beta = 0: Z is not read), at batch bt;
//   tr = 1 stores the transposed element (y[n·ldy + m]: a forward product computed with its operands
//   swapped for a narrow output).
// Z_IS_Y = 1: Z is the output itself (accumulating in place), read through y at y_off with ldz, z_bs,
//   since WebGPU forbids binding a range twice when one binding is writable. An override, not a
//   Params field: lavapipe ran the default platformer's training at 0.95x with a run-time branch here.

override Z_IS_Y: u32 = 0u;

fn store(m: u32, n: u32, bt: u32, v: f32) {
    let tr = p.tr != 0u;
    let r = select(m, n, tr); let c = select(n, m, tr);
    var out = p.alpha * v;
    if (p.beta != 0.0) {
        let iz = bt * p.z_bs + r * p.ldz + c;
        if (Z_IS_Y != 0u) {
            out += p.beta * y[p.y_off + iz];
        } else {
            out += p.beta * z[p.z_off + iz];
        }
    }
    y[p.y_off + bt * p.y_bs + r * p.ldy + c] = out;
}
