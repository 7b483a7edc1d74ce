// epilogue.wgsl — the store every matmul kernel ends with (included by matmul.wgsl and
// matmul_subgroup.wgsl, whose Params and bindings y, z it uses):
//
//   Y[m, n] = alpha·v + beta·Z[m, n]   (beta = 0: Z is not read; z_is_y = 1: Z is Y, read through y), at batch bt;
//   tr = 1 stores the transposed element (y[n·ldy + m]: a forward product computed with its operands
//   swapped for a narrow output).

fn store(m: u32, n: u32, bt: u32, v: f32) {
    let tr = p.tr != 0u;
    let r = select(m, n, tr); let c = select(n, m, tr);
    var out = p.alpha * v;
    if (p.beta != 0.0) {
        let iz = bt * p.z_bs + r * p.ldz + c;
        if (p.z_is_y != 0u) {
            out += p.beta * y[p.y_off + iz];  // accumulate: Z = Y (z unbound, see z_is_y)
        } else {
            out += p.beta * z[p.z_off + iz];
        }
    }
    y[p.y_off + bt * p.y_bs + r * p.ldy + c] = out;
}
