#!/usr/bin/env python3
"""The `tilec` Python package on a GPU: the memory-bound kernels of the library and FMHA
launched on PyTorch tensors, each compared with PyTorch on ragged shapes, in f16 and bf16
where the kernel takes both; non-contiguous views, streams, the validation of a real launch,
and every `python` block of docs/python.md (`quant_fp4` in its MXFP4 form: NVFP4's ue4m3
factors have no torch dtype to pass). Run from the repository root by
tests/gpu/run.sh (PYTHONPATH holding the built package); prints one line a case, exits 1 on
any failure.
"""
import math
import os
import sys
import time

import torch

import tilec

torch.manual_seed(0)
DEV = "cuda"
RESULTS = []


def close(name, got, want, tol):
    got, want = got.float(), want.float()
    denom = want.norm().item() or 1.0
    err = (got - want).norm().item() / denom
    ok = err <= tol and bool(torch.isfinite(got).all())
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: rel L2 {err:.2e} (tolerance {tol:g})", flush=True)


def exact(name, got, want):
    ok = bool(torch.equal(got, want))
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {'equal' if ok else 'differs'}", flush=True)


def randn(*shape, dtype=torch.float16):
    return torch.randn(*shape, device=DEV, dtype=dtype)


def kernel(name, file=None, **consts):
    return tilec.kernel(f"kernels/{file or name}.tile", name, **consts)


def memory_bound():
    for dt, tag in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        tol = 1e-2 if dt == torch.bfloat16 else 2e-3
        x = randn(37, 1000, dtype=dt)
        y = torch.empty_like(x)
        kernel("softmax", T=dt)(x, y)
        close(f"softmax 37x1000 {tag}", y, torch.softmax(x.float(), -1), tol)
        x = randn(5, 7000, dtype=dt)
        y = torch.empty_like(x)
        kernel("softmax_online", T=dt)(x, y)
        close(f"softmax_online 5x7000 {tag}", y, torch.softmax(x.float(), -1), tol)
        x, w = randn(33, 4096, dtype=dt), randn(4096, dtype=dt)
        y = torch.empty_like(x)
        kernel("rmsnorm", T=dt)(x, w, y, 1e-6)
        close(f"rmsnorm 33x4096 {tag}", y, torch.nn.functional.rms_norm(x.float(), (4096,), w.float(), 1e-6), tol)
        a, b = randn(33, 3000, dtype=dt), randn(33, 3000, dtype=dt)
        y = torch.empty_like(a)
        kernel("silu_mul", T=dt)(a, b, y)
        close(f"silu_mul 33x3000 {tag}", y, torch.nn.functional.silu(a.float()) * b.float(), tol)
        kernel("swiglu", T=dt)(a, b, y)
        close(f"swiglu 33x3000 {tag}", y, torch.nn.functional.silu(a.float()) * b.float(), tol)
        kernel("gelu", T=dt)(a, y)
        close(f"gelu 33x3000 {tag}", y, torch.nn.functional.gelu(a.float(), approximate="tanh"), tol)
        kernel("residual_add", T=dt)(a, b, y)
        close(f"residual_add 33x3000 {tag}", y, a.float() + b.float(), tol)
        bias = randn(3000, dtype=dt)
        kernel("bias_add", T=dt)(a, bias, y)
        close(f"bias_add 33x3000 {tag}", y, a.float() + bias.float(), tol)
        x = randn(300, 200, dtype=dt)
        yt = torch.empty(200, 300, device=DEV, dtype=dt)
        kernel("transpose", T=dt)(x, yt)
        exact(f"transpose 300x200 {tag}", yt, x.t())
        ids = torch.randint(0, 500, (77,), device=DEV, dtype=torch.int32)
        table = randn(500, 256, dtype=dt)
        out = torch.empty(77, 256, device=DEV, dtype=dt)
        kernel("embedding", T=dt)(ids, table, out)
        exact(f"embedding 77 of 500x256 {tag}", out, table[ids.long()])
        x = randn(100, 1000, dtype=dt)
        rm = torch.empty(100, 1, device=DEV, dtype=dt)
        bm = torch.empty(13, 1, device=DEV, dtype=dt)
        kernel("row_max", T=dt)(x, rm, bm)
        exact(f"row_max 100x1000 {tag}", rm, x.max(1, keepdim=True).values)
    # RoPE in place on q and k (Qwen2's 28/4 heads in tiles of 32/8), against the halves rotation.
    b, s, hq, hk, d = 2, 100, 28, 4, 128
    q, k = randn(b, s, hq, d), randn(b, s, hk, d)
    pos = torch.arange(s, device=DEV, dtype=torch.float32)[:, None]
    inv = 1.0 / (10000 ** (torch.arange(64, device=DEV, dtype=torch.float32) / 64))
    cos, sin = torch.cos(pos * inv).half(), torch.sin(pos * inv).half()

    def rotated(t):
        lo, hi = t[..., :64].float(), t[..., 64:].float()
        c, sn = cos[None, :, None, :].float(), sin[None, :, None, :].float()
        return torch.cat([lo * c - hi * sn, hi * c + lo * sn], -1)
    want_q, want_k = rotated(q), rotated(k)
    kernel("rope", H=32, HK=8)(q, k, cos, sin)
    close("rope 2x100 28/4 heads in place", torch.cat([q.flatten(), k.flatten()]),
          torch.cat([want_q.flatten(), want_k.flatten()]), 2e-3)
    # Dropout: the mask is Philox's (fixed by seed and offset), y is x·mask/(1-p) exactly.
    x = randn(64, 1000)
    y, mask = torch.empty_like(x), torch.empty_like(x)
    kernel("dropout")(x, y, mask, 0.1, 1234, 0)
    kept = mask.float().mean().item()
    ok = abs(kept - 0.9) < 0.01 and set(mask.unique().tolist()) <= {0.0, 1.0}
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} dropout 64x1000 p=0.1: kept {kept:.4f}", flush=True)
    close("dropout y = x·mask/(1-p)", y, x.float() * mask.float() / 0.9, 2e-3)
    y2, mask2 = torch.empty_like(x), torch.empty_like(x)
    kernel("dropout")(x, y2, mask2, 0.1, 1234, 0)
    exact("dropout: the same seed gives the same mask", mask2, mask)


def more_memory_bound():
    """The rest of the library's memory-bound kernels: reductions with indices, atomics, a
    persistent row loop, tables, fp8 quantisation, the fused epilogue, top-k, the KV append."""
    x = randn(33, 5000)
    out = torch.empty(33, 1, device=DEV, dtype=torch.int32)
    kernel("argmax")(x, out)
    exact("argmax 33x5000", out.long(), x.float().argmax(1, keepdim=True))
    keys = torch.randint(0, 64, (10000,), device=DEV, dtype=torch.int32)
    weights = torch.rand(10000, device=DEV)
    counts = torch.zeros(64, device=DEV, dtype=torch.int32)
    sums = torch.zeros(64, device=DEV)
    kernel("histogram")(keys, weights, counts, sums)
    exact("histogram counts (atomics)", counts.long(), torch.bincount(keys.long(), minlength=64))
    close("histogram sums (atomics)", sums, torch.bincount(keys.long(), weights, minlength=64), 1e-5)
    x, w = randn(1000, 4096), randn(4096)
    y = torch.empty_like(x)
    kernel("rmsnorm_persistent", "rmsnorm")(x, w, y, 1e-6)
    close("rmsnorm_persistent 1000x4096", y, torch.nn.functional.rms_norm(x.float(), (4096,), w.float(), 1e-6), 2e-3)
    cos, sin = torch.empty(300, 64, device=DEV, dtype=torch.float16), torch.empty(300, 64, device=DEV, dtype=torch.float16)
    kernel("rope_table", "rope")(cos, sin, 10000.0)
    angle = torch.arange(300, device=DEV, dtype=torch.float64)[:, None] * 10000.0 ** (
        -torch.arange(64, device=DEV, dtype=torch.float64) / 64)
    close("rope_table 300x64 (cos)", cos, torch.cos(angle), 2e-3)
    close("rope_table 300x64 (sin)", sin, torch.sin(angle), 2e-3)
    x = randn(37, 3000, dtype=torch.bfloat16)
    q = torch.empty(37, 3000, device=DEV, dtype=torch.float8_e4m3fn)
    scale = torch.empty(37, device=DEV)
    kernel("quant_fp8_rowwise", "quant_fp8")(x, q, scale)
    want_scale = x.float().abs().amax(1).clamp_min(1e-12) / 448.0
    close("quant_fp8_rowwise scales", scale, want_scale, 1e-6)
    close("quant_fp8_rowwise dequantised", q.float() * scale[:, None], x.float(), 6e-2)
    acc = torch.randn(17, 3584, device=DEV)
    residual, w = randn(17, 3584), randn(3584)
    y, normed = torch.empty_like(residual), torch.empty_like(residual)
    want_y = (acc + residual.float()).half()
    want_n = torch.nn.functional.rms_norm(want_y.float(), (3584,), w.float(), 1e-6)
    kernel("acc_residual_rmsnorm", "splitk_epilogue")(acc, residual, w, y, normed, 1e-6)
    close("acc_residual_rmsnorm: the residual stream", y, want_y, 1e-3)
    close("acc_residual_rmsnorm: the normed activations", normed, want_n, 2e-3)
    exact("acc_residual_rmsnorm clears the accumulator", acc, torch.zeros_like(acc))
    x = randn(16, 152064)
    chunks = -(-152064 // 2048)
    part_v = torch.empty(16, chunks * 8, device=DEV)
    part_i = torch.empty(16, chunks * 8, device=DEV, dtype=torch.int32)
    values = torch.empty(16, 8, device=DEV, dtype=torch.float16)
    indices = torch.empty(16, 8, device=DEV, dtype=torch.int32)
    kernel("topk_partial", "topk")(x, part_v, part_i)
    kernel("topk_merge", "topk")(part_v, part_i, values, indices)
    want = torch.topk(x.float(), 8, dim=1)
    exact("topk 16x152064 k=8: values", values.float(), want.values)
    exact("topk: indices point at the values", x.gather(1, indices.long()).float(), want.values)
    new = randn(3, 4, 5, 128)
    cache = torch.zeros(3, 4, 64, 128, device=DEV, dtype=torch.float16)
    pos = torch.tensor([0, 17, 62], device=DEV, dtype=torch.int32)
    kernel("kv_append")(new, cache, pos)
    want = torch.zeros_like(cache)
    for b, p in enumerate(pos.tolist()):
        n = min(5, 64 - p)  # past the cache's end nothing is written
        want[b, :, p:p + n] = new[b, :, :n]
    exact("kv_append at ragged positions (one past the end)", cache, want)


def epilogues_quantisers_moe_decode():
    """The split-K epilogues, RoPE fused with the KV append, blockwise fp8 quantisation, the
    MoE routing and dispatch (DeepSeek-V2-Lite's 64 experts, 6 a token), and decode attention
    at ragged lengths."""
    acc, bias = torch.randn(9, 3000, device=DEV), randn(3000)
    y = torch.empty(9, 3000, device=DEV, dtype=torch.float16)
    want = (acc + bias.float()).half()
    kernel("acc_bias", "splitk_epilogue")(acc, bias, y)
    close("acc_bias", y, want, 1e-3)
    exact("acc_bias clears the accumulator", acc, torch.zeros_like(acc))
    acc, res = torch.randn(9, 3000, device=DEV), randn(9, 3000)
    want = (acc + res.float()).half()
    kernel("acc_residual", "splitk_epilogue")(acc, res, y)
    close("acc_residual", y, want, 1e-3)
    gate, up = torch.randn(9, 3000, device=DEV), torch.randn(9, 3000, device=DEV)
    want = torch.nn.functional.silu(gate) * up
    kernel("acc_swiglu", "splitk_epilogue")(gate, up, y)
    close("acc_swiglu", y, want, 2e-3)
    exact("acc_swiglu clears both accumulators", torch.cat([gate, up]), torch.zeros(18, 3000, device=DEV))

    b, s, hq, hk, d, sc = 2, 3, 28, 4, 128, 40
    q, k, v = randn(b, s, hq, d), randn(b, s, hk, d), randn(b, s, hk, d)
    pos_list = [5, 37]
    inv = 10000.0 ** (-torch.arange(64, device=DEV, dtype=torch.float32) / 64)
    angle = torch.arange(sc, device=DEV, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = torch.cos(angle).half(), torch.sin(angle).half()
    kc = torch.zeros(b, hk, sc, d, device=DEV, dtype=torch.float16)
    vc = torch.zeros_like(kc)
    want_q, want_k, want_v = q.float().clone(), torch.zeros_like(kc, dtype=torch.float32), torch.zeros_like(kc)
    for bi, p0 in enumerate(pos_list):
        for si in range(s):
            p = p0 + si
            if p >= sc:
                continue
            c, sn = cos[p].float(), sin[p].float()
            lo, hi = q[bi, si, :, :64].float(), q[bi, si, :, 64:].float()
            want_q[bi, si] = torch.cat([lo * c - hi * sn, hi * c + lo * sn], -1)
            lo, hi = k[bi, si, :, :64].float(), k[bi, si, :, 64:].float()
            want_k[bi, :, p] = torch.cat([lo * c - hi * sn, hi * c + lo * sn], -1)
            want_v[bi, :, p] = v[bi, si]
    pos = torch.tensor(pos_list, device=DEV, dtype=torch.int32)
    kernel("rope_kv_append", "rope", H=32, HK=8)(q, k, v, cos, sin, kc, vc, pos)
    # Sequence 1 writes rows 37 to 39, the cache's last three.
    close("rope_kv_append: q rotated in place", q, want_q, 2e-3)
    close("rope_kv_append: K rotated into the cache", kc, want_k, 2e-3)
    exact("rope_kv_append: V copied into the cache", vc, want_v)

    x = randn(100, 384, dtype=torch.bfloat16)
    qf = torch.empty(100, 384, device=DEV, dtype=torch.float8_e4m3fn)
    sc1 = torch.empty(100, 3, device=DEV)
    kernel("quant_fp8_blockwise", "quant_fp8")(x, qf, sc1)
    want = x.float().view(100, 3, 128).abs().amax(2).clamp_min(1e-12) / 448.0
    close("quant_fp8_blockwise (1x128) scales", sc1, want, 1e-6)
    close("quant_fp8_blockwise dequantised", qf.float().view(100, 3, 128) * sc1[:, :, None], x.float().view(100, 3, 128), 6e-2)
    x = randn(200, 384, dtype=torch.bfloat16)
    qf = torch.empty(200, 384, device=DEV, dtype=torch.float8_e4m3fn)
    sc2 = torch.empty(2, 3, device=DEV)
    kernel("quant_fp8_block2d", "quant_fp8")(x, qf, sc2)
    padded = torch.zeros(256, 384, device=DEV)
    padded[:200] = x.float()
    want = padded.view(2, 128, 3, 128).abs().amax((1, 3)).clamp_min(1e-12) / 448.0
    close("quant_fp8_block2d (128x128) scales", sc2, want, 1e-6)

    m, e, topk = 37, 64, 6
    logits = torch.randn(m, e, device=DEV)
    weights = torch.empty(m, topk, device=DEV)
    ids = torch.empty(m, topk, device=DEV, dtype=torch.int32)
    kernel("moe_route", T="f32", EP=64, TOPK=topk)(logits, weights, ids)
    want = torch.topk(torch.softmax(logits, -1), topk, dim=-1)
    exact("moe_route: the top-6 experts, largest first", ids.long(), want.indices)
    close("moe_route: their probabilities", weights, want.values, 1e-6)
    hidden = 256
    xt = randn(m, hidden)
    rows = 16
    nb = -(-m // rows)
    counts_ws = torch.empty(nb, e, device=DEV, dtype=torch.int32)
    bases = torch.empty(nb, e, device=DEV, dtype=torch.int32)
    offsets = torch.empty(e + 1, device=DEV, dtype=torch.int32)
    done = torch.zeros(1, device=DEV, dtype=torch.int32)
    kernel("moe_align", "moe_dispatch", EP=64, KP=8, ROWS=rows)(ids, counts_ws, bases, offsets, done)
    xs = torch.empty(m * topk, hidden, device=DEV, dtype=torch.float16)
    pos = torch.empty(m, topk, device=DEV, dtype=torch.int32)
    kernel("moe_permute", "moe_dispatch", KP=8, ROWS=rows)(ids, bases, xt, xs, pos)
    flat = ids.long().flatten()
    order = torch.argsort(flat * (m * topk) + torch.arange(m * topk, device=DEV), stable=True)
    want_pos = torch.empty_like(flat)
    want_pos[order] = torch.arange(m * topk, device=DEV)
    exact("moe_align + moe_permute: positions sorted by expert, then token and slot", pos.long().flatten(), want_pos)
    exact("moe_align: the experts' offsets", offsets.long(), torch.cat([torch.zeros(1, device=DEV, dtype=torch.long),
          torch.bincount(flat, minlength=e).cumsum(0)]))
    exact("moe_permute: each row where its position says", xs[want_pos], xt.repeat_interleave(topk, 0))
    exact("moe_align leaves its counter at zero", done, torch.zeros_like(done))
    ys, shared = randn(m * topk, hidden), randn(m, hidden)
    out = torch.empty(m, hidden, device=DEV, dtype=torch.float16)
    kernel("moe_combine", "moe_dispatch", KP=8)(ys, pos, weights, shared, out)
    want = shared.float() + (ys.float()[pos.long()] * weights[:, :, None]).sum(1)
    close("moe_combine: the weighted rows back, plus the shared experts", out, want, 2e-3)

    bsz, hq, hkv, length = 3, 28, 4, 1000
    q, kk, vv = randn(bsz, hq, 128), randn(bsz, hkv, length, 128), randn(bsz, hkv, length, 128)
    lens = torch.tensor([1000, 17, 0], device=DEV, dtype=torch.int32)
    o_part = torch.empty(bsz, hkv, 32, 8, 128, device=DEV)
    stats = torch.empty(bsz, hkv, 32, 2, 8, device=DEV)
    count = torch.zeros(bsz, hkv, device=DEV, dtype=torch.int32)
    out = torch.empty(bsz, hq, 128, device=DEV, dtype=torch.float16)
    kernel("attention_decode_grouped", G=7)(q, kk, vv, out, lens, o_part, stats, count, 1.0 / math.sqrt(128))
    for bi, n in enumerate(lens.tolist()):
        if n == 0:
            exact("decode attention: a sequence of length 0 gives zeros", out[bi], torch.zeros_like(out[bi]))
            continue
        want = torch.nn.functional.scaled_dot_product_attention(
            q[bi, :, None].float(), kk[bi, :, :n].float(), vv[bi, :, :n].float(), enable_gqa=True)[:, 0]
        close(f"decode attention GQA 28/4 at length {n}", out[bi], want, 5e-3)


def mxfp8_paged_mla():
    """MXFP8 and MXFP4 quantisation (ue8m0 factors: the OCP MX rule), paged decode attention over
    scattered pages, and MLA decode over the latent cache (DeepSeek-V2-Lite's shapes)."""
    x = randn(40, 256, dtype=torch.bfloat16)
    q8 = torch.empty(40, 256, device=DEV, dtype=torch.float8_e4m3fn)
    sf = torch.empty(40, 8, device=DEV, dtype=torch.float8_e8m0fnu)
    kernel("quant_mxfp8", "quant_mx")(x, q8, sf)
    blocks = x.float().view(40, 8, 32)
    amax = blocks.abs().amax(2)
    _, exponent = torch.frexp(amax / 256.0)  # amax/256 = m·2^e, m in [0.5, 1): floor(log2) = e - 1
    want_sf = (exponent - 1 + 127).to(torch.uint8)
    exact("quant_mxfp8: ue8m0 factors 2^floor(log2(amax/256))", sf.view(torch.uint8), want_sf)
    scale = torch.ldexp(torch.ones_like(amax), exponent - 1)
    want_q = (blocks / scale[:, :, None]).clamp(-448, 448).view(40, 256).to(torch.float8_e4m3fn)
    exact("quant_mxfp8: e4m3 elements, saturating", q8.view(torch.uint8), want_q.view(torch.uint8))

    # MXFP4 through quant_fp4 (ue8m0 factors, blocks of 32, DIV 4): the elements rounded to
    # FP4 E2M1 (nearest, ties to the even encoding, saturating to 6, the sign kept: a small
    # negative value is -0), element 2i in the low nibble. NVFP4's ue4m3 factors have no torch dtype to pass from Python.
    x = randn(24, 256, dtype=torch.bfloat16)
    q4 = torch.empty(24, 128, device=DEV, dtype=torch.float4_e2m1fn_x2)
    sf4 = torch.empty(24, 8, device=DEV, dtype=torch.float8_e8m0fnu)
    kernel("quant_fp4", "quant_mx", SF="ue8m0", BLOCK=32, DIV=4.0)(x, q4, sf4, 1.0)
    blocks = x.float().view(24, 8, 32)
    _, exponent = torch.frexp(blocks.abs().amax(2) / 4.0)
    exact("quant_fp4 (MXFP4): ue8m0 factors", sf4.view(torch.uint8), (exponent - 1 + 127).to(torch.uint8))
    scaled = (blocks / torch.ldexp(torch.ones_like(blocks[:, :, :1]), exponent[:, :, None] - 1)).view(24, 256)
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], device=DEV)
    distance = (scaled.abs().clamp(max=6.0)[:, :, None] - grid).abs()
    code = (distance + (torch.arange(8, device=DEV) % 2) * 1e-6).argmin(-1)  # ties to the even code
    nibble = torch.where(scaled < 0, code + 8, code).to(torch.uint8)  # a negative zero keeps its sign
    want = nibble[:, 0::2] | (nibble[:, 1::2] << 4)
    exact("quant_fp4 (MXFP4): packed E2M1 pairs", q4.view(torch.uint8), want)

    b, hq, hkv, d, page, maxp = 3, 28, 4, 128, 16, 20
    lens = [300, 1, 0]
    pages = 70
    kc, vc = randn(pages, page, hkv, d), randn(pages, page, hkv, d)
    tables = torch.randperm(pages, device=DEV)[: b * maxp].view(b, maxp).to(torch.int32)
    q = randn(b, hq, d)
    out = torch.empty(b, hq, d, device=DEV, dtype=torch.float16)
    o_part = torch.empty(b, hkv, 32, 8, d, device=DEV)
    stats = torch.empty(b, hkv, 32, 2, 8, device=DEV)
    count = torch.zeros(b, hkv, device=DEV, dtype=torch.int32)
    kernel("paged_attention_decode", G=7)(q, kc, vc, tables, torch.tensor(lens, device=DEV, dtype=torch.int32), out,
                                          o_part, stats, count, 1.0 / math.sqrt(d))
    for bi, n in enumerate(lens):
        if n == 0:
            exact("paged decode: a sequence of length 0 gives zeros", out[bi], torch.zeros_like(out[bi]))
            continue
        rows = tables[bi].long()
        keys = kc[rows].reshape(maxp * page, hkv, d)[:n].transpose(0, 1).float()
        values = vc[rows].reshape(maxp * page, hkv, d)[:n].transpose(0, 1).float()
        want = torch.nn.functional.scaled_dot_product_attention(q[bi, :, None].float(), keys, values,
                                                                enable_gqa=True)[:, 0]
        close(f"paged decode over scattered pages, length {n}", out[bi], want, 5e-3)

    b, nh, length, dc, dr = 2, 16, 700, 512, 64
    ql, qr = randn(b, nh, dc), randn(b, nh, dr)
    lat, rope_part = randn(b, length, dc), randn(b, length, dr)
    lens = torch.tensor([700, 33], device=DEV, dtype=torch.int32)
    out = torch.empty(b, nh, dc, device=DEV, dtype=torch.float16)
    o_part = torch.empty(264, 16, dc, device=DEV, dtype=torch.float16)
    stats = torch.empty(264, 2, 16, device=DEV)
    count = torch.zeros(b, 1, 9, device=DEV, dtype=torch.int32)
    scale = 1.0 / math.sqrt(dc + dr)
    kernel("mla_decode")(ql, qr, lat, rope_part, lens, out, o_part, stats, count, scale)
    for bi, n in enumerate(lens.tolist()):
        scores = (ql[bi].float() @ lat[bi, :n].float().t() + qr[bi].float() @ rope_part[bi, :n].float().t()) * scale
        want = torch.softmax(scores, -1) @ lat[bi, :n].float()
        close(f"MLA decode over the latent cache, length {n}", out[bi], want, 5e-3)


def fmha():
    for causal in (False, True):
        for d in (64, 128):
            b, h, s = 2, 4, 300
            q, k, v = randn(b, h, s, d), randn(b, h, s, d), randn(b, h, s, d)
            o = torch.empty_like(q)
            kernel("fmha", H=h, TILE_D=d, CAUSAL=causal)(q, k, v, o, 1.0 / math.sqrt(d))
            want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
            close(f"fmha B{b} H{h} S{s} D{d} causal={causal}", o, want, 5e-3)
    # Grouped-query attention: 8 query heads on 2 KV heads.
    q, k, v = randn(1, 8, 257, 128), randn(1, 2, 257, 128), randn(1, 2, 257, 128)
    o = torch.empty_like(q)
    kernel("fmha", H=8, GROUP=4)(q, k, v, o, 1.0 / math.sqrt(128))
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
    close("fmha GQA 8/2 heads S257", o, want, 5e-3)


def views_streams_errors():
    sm = kernel("softmax", T="f16")
    base = randn(64, 2048)
    x = base[:, 1000:2000]  # a view: row stride 2048, offset 1000 elements
    y = torch.empty(64, 1000, device=DEV, dtype=torch.float16)
    info = sm(x, y)
    close("softmax on a strided view", y, torch.softmax(x.float(), -1), 2e-3)
    odd = base[:, 1:1001]  # 2 bytes past a 16-byte boundary: the scalar-access variant for x
    y = torch.empty(64, 1000, device=DEV, dtype=torch.float16)
    info = sm(odd, y)
    ok = info["unaligned"] == ["x"]
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} an unaligned view gets the scalar variant: {info['unaligned']}", flush=True)
    close("softmax on an unaligned view", y, torch.softmax(odd.float(), -1), 2e-3)
    # Ordered on a side stream after a producer kernel on it, without a synchronisation between.
    s = torch.cuda.Stream()
    x = randn(4096, 1000)
    y = torch.empty_like(x)
    with torch.cuda.stream(s):
        z = x * 2.0  # PyTorch's kernel on s
        sm(z, y)     # tilec's, on s after it
    torch.cuda.current_stream().wait_stream(s)
    close("softmax after a PyTorch kernel on a side stream", y, torch.softmax((x * 2.0).float(), -1), 2e-3)
    try:
        sm(x, torch.empty(4096, 1000, device=DEV, dtype=torch.float32))
        ok, msg = False, "launched"
    except tilec.LaunchError as e:
        ok, msg = "argument 1 (`y`)" in str(e), str(e)
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} a wrong dtype is refused: {msg}", flush=True)
    try:
        sm(x.cpu(), y)
        ok, msg = False, "launched"
    except tilec.LaunchError as e:
        ok, msg = "CUDA tensors" in str(e), str(e)
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} a CPU tensor is refused: {msg}", flush=True)
    ok = tilec.device_target(0) == "sm_90a"
    RESULTS.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} device_target: {tilec.device_target(0)}", flush=True)


def docs_blocks():
    """Every python block of docs/python.md, in order, in one namespace."""
    text = open("docs/python.md").read()
    ns = {}
    for i, block in enumerate(text.split("```python\n")[1:]):
        code = block.split("```")[0]
        try:
            exec(compile(code, f"docs/python.md block {i + 1}", "exec"), ns)
            torch.cuda.synchronize()
            ok = True
        except Exception as e:  # the block's own failure, reported with the block
            ok = False
            print(f"  {type(e).__name__}: {e}")
        RESULTS.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} docs/python.md python block {i + 1}", flush=True)


def main():
    t = time.time()
    print(f"tilec {tilec.__version__} on {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cache {tilec.cache_dir()}", flush=True)
    memory_bound()
    more_memory_bound()
    epilogues_quantisers_moe_decode()
    mxfp8_paged_mla()
    fmha()
    views_streams_errors()
    docs_blocks()
    torch.cuda.synchronize()
    failed = RESULTS.count(False)
    print(f"test_torch: {len(RESULTS) - failed} passed, {failed} failed in {time.time() - t:.1f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
