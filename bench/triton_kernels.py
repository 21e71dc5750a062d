"""Triton kernels that bench/peers.py times beside tilec: the same algorithms as the library's
`matmul` and `fmha`, written the way a Triton user would (no hand-tuned assembly), so that the
comparison is compiler against compiler.

- `matmul_kernel`: C = A @ B, row-major, one BM x BN tile of C a program, the tiles visited in
  groups of GROUP rows of tiles so that neighbouring programs share A and B in L2. Shapes must
  be multiples of the tile (the peers' shapes are).
- `attention_forward`: softmax(Q K^T / sqrt(D)) V over [B, H, S, D] f16 tensors, the online
  softmax of FlashAttention-2 in base 2, one BLOCK_M slice of queries a program; causal masks
  the keys after the query and stops at the diagonal. S must be a multiple of both blocks.
"""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_row = (pid // per_group) * GROUP
    rows_here = min(tiles_m - first_row, GROUP)
    tile_m = first_row + (pid % per_group) % rows_here
    tile_n = (pid % per_group) // rows_here
    offs_m = tile_m * BM + tl.arange(0, BM)
    offs_n = tile_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + offs_m[:, None] * K + (k0 + offs_k)[None, :])
        b = tl.load(B + (k0 + offs_k)[:, None] * N + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + offs_m[:, None] * N + offs_n[None, :], acc.to(C.dtype.element_ty))


@triton.jit
def _attention(Q, K, V, O, qk_scale, S, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               CAUSAL: tl.constexpr):
    block = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    base = head * S * D
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    dims = tl.arange(0, D)
    q = tl.load(Q + base + rows[:, None] * D + dims[None, :])
    row_max = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    end = (block + 1) * BLOCK_M if CAUSAL else S
    for start in range(0, end, BLOCK_N):
        keys = start + cols
        k_t = tl.load(K + base + keys[None, :] * D + dims[:, None])
        scores = tl.dot(q, k_t) * qk_scale
        if CAUSAL:
            scores = tl.where(rows[:, None] >= keys[None, :], scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        p = tl.math.exp2(scores - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        v = tl.load(V + base + keys[:, None] * D + dims[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * rescale[:, None])
        row_max = new_max
    tl.store(O + base + rows[:, None] * D + dims[None, :], (acc / row_sum[:, None]).to(O.dtype.element_ty))


def attention_forward(q, k, v, causal, config):
    """Launches `_attention` with config (BLOCK_M, BLOCK_N, num_warps, num_stages)."""
    b, h, s, d = q.shape
    block_m, block_n, warps, stages = config
    out = torch.empty_like(q)
    qk_scale = 1.0 / math.sqrt(d) * 1.4426950408889634  # log2(e): the softmax in base 2
    _attention[(s // block_m, b * h)](q, k, v, out, qk_scale, s, D=d, BLOCK_M=block_m, BLOCK_N=block_n,
                                      CAUSAL=causal, num_warps=warps, num_stages=stages)
    return out
