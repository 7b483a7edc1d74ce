"""matmul.wgsl and matmul_subgroup.wgsl: the three products of a linear layer, plain and split-K.
"""
from __future__ import annotations

from golden.ref.common import f32, family, rand, write


# (M rows, K in features, N out features). The tuned kernels compute 8×8 outputs per invocation in
# 64-invocation workgroups (64×64 outputs) and step K by 4, so edges sit at 1, 3/4/5, 7/8/9, 63/64/65.
MATMUL_CASES = {
    "one": (1, 1, 1),
    "tiny_uneven": (5, 7, 3),
    "k3": (9, 3, 12),
    "k5": (17, 5, 8),
    "tile_edges": (63, 9, 65),
    "tile_exact": (64, 8, 64),
    "tile_plus": (65, 7, 63),
    "uneven": (100, 37, 51),
    # the policy's real widths; the row count only sets the length of dW's reduction
    "encoder": (521, 413, 128),       # x·W_encᵀ, D = 413 (unaligned rows); dW_enc over 521 rows
    "mingru": (385, 128, 384),        # x·W_lᵀ; dW_l [384,128] over 385 rows
    "decoder": (257, 128, 7),         # y·W_decᵀ, A+1 = 7
}


@family
def matmul(gen):
    """y = x·Wᵀ with autograd's dx = dout·W and dW = doutᵀ·x."""
    tensors, cases = {}, {}
    for name, (M, K, N) in MATMUL_CASES.items():
        x = rand(gen, M, K).requires_grad_()
        w = rand(gen, N, K).requires_grad_()
        dout = rand(gen, M, N)
        y = x @ w.T
        (y * dout).sum().backward()
        for key, t in (("x", x), ("w", w), ("dout", dout), ("y", y), ("dx", x.grad), ("dw", w.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"M": M, "K": K, "N": N}
    write("matmul", tensors, "matmul: y = x @ w.T (x [M,K], w [N,K]); dx, dw from (y*dout).sum().backward()", cases)

# Split-K (matmul.wgsl's tile and wgmem kernels). Each case reduces over K (y), N (dx) and M
# (dW); the tests split those lengths 2, 3 and 16 ways (chunks of ceil4(ceil(len/splits)) values), so
# the last chunk is sometimes 1 long (65 = 8·8 + 1), exactly full (64), or ragged. Also the shapes of
# the Newton–Schulz Gram products (mingru X [384,128]: G = XᵀX over 384, update over 128; encoder
# X [128,413]: G = XXᵀ over 413; decoder [7,128]) and the decoder's dW over many rows. A file of its
# own so that matmul.safetensors stays bit for bit as it was.
MATMUL_SPLITK_CASES = {
    "one": (1, 1, 1),
    "k65": (17, 65, 9),            # y over 65: 16 splits → 9 chunks of 8, the last of 1
    "k64": (64, 64, 64),           # chunks exactly full; tile (32/64) edges exact
    "wg_edges": (33, 17, 31),      # one past / one short of the 32-wide tiles
    "k129": (45, 129, 66),         # wgmem's 16-deep stages: 8 full + 1; 64-wide tiles ±2
    "long_rows": (1031, 7, 5),     # dW over 1031 rows (16 splits: 15 chunks of 68 + 11)
    "decoder_rows": (1029, 128, 7),  # decoder: y [1029,7] over 128, dW [7,128] over 1029 rows
    "gram_mingru": (384, 128, 128),
    "gram_encoder": (128, 413, 128),
    "gram_decoder": (7, 128, 7),
}


@family
def matmul_splitk(gen):
    """y = x·Wᵀ with dx = dout·W and dW = doutᵀ·x at split-K chunk edges and Gram sides."""
    tensors, cases = {}, {}
    for name, (M, K, N) in MATMUL_SPLITK_CASES.items():
        x = rand(gen, M, K).requires_grad_()
        w = rand(gen, N, K).requires_grad_()
        dout = rand(gen, M, N)
        y = x @ w.T
        (y * dout).sum().backward()
        for key, t in (("x", x), ("w", w), ("dout", dout), ("y", y), ("dx", x.grad), ("dw", w.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"M": M, "K": K, "N": N}
    write("matmul_splitk", tensors, "matmul at split-K chunk edges and Gram shapes: y = x @ w.T (x [M,K], "
          "w [N,K]); dx, dw from (y*dout).sum().backward()", cases)
