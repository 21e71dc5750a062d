#!/usr/bin/env python3
"""A transformers Qwen2 model with its modules replaced by tilec kernels, the way TileGym
patches models: the RMSNorms (`kernels/rmsnorm.tile`), the rotary embedding
(`kernels/rope.tile`, in place), the attention (`kernels/fmha.tile` for the prefill,
`kernels/attention_decode_grouped.tile` for each decode step, registered as an attention
implementation) and the MLP's activation (`kernels/silu_mul.tile`), all through the `tilec`
Python package on the model's own tensors. The projections stay PyTorch's (cuBLAS).

The model is the random-weight Qwen2-7B of examples/qwen2/reference.py (its configuration
and initialisation, fewer layers with --layers). It generates greedily twice from the same
prompt — unpatched, then patched — and compares the tokens; then it feeds the unpatched run's
tokens to the patched model and to the fp32 model, and at every step and for every sequence
the patched logits' relative L2 distance from the fp32 ones must stay within 2× that of
transformers' own fp16 logits (the bound of examples/qwen2).
Both runs are timed (prefill and decode, CUDA-synchronised wall time). Results go to --out.

What is not replaced without a copy, or not at all:
- RMSNorm reads the hidden states as [tokens, hidden] (`reshape`: a view, they are contiguous);
- the rotary embedding rotates q and k in place in the projections' outputs (transformers
  returns new tensors; the projections' outputs are not used again), with the cos/sin rows of
  the first sequence's positions as its table: the batch's sequences must share positions (no
  padding; not checked at each layer, which would synchronise with the GPU);
- attention ignores transformers' mask: prompts of equal length, no padding (asserted: the
  mask, when given, must be the plain causal one);
- the decode step's K/V are transformers' cache tensors as they are (contiguous, grown by
  `torch.cat` in transformers' DynamicCache — that copy is transformers', not ours).

    PYTHONPATH=target/python python3 examples/patch_transformers.py --out out/patched [--layers 28]
"""
import argparse
import json
import math
import pathlib
import sys

import numpy as np
import torch
import transformers
from transformers.models.qwen2 import modeling_qwen2

import tilec

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "qwen2"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "common"))
from hf_run import forced_logits, greedy  # noqa: E402  (the greedy run the references share)
from reference import build, config  # noqa: E402  (the Qwen2-7B of examples/qwen2)

ROOT = pathlib.Path(__file__).resolve().parent.parent
K = {}  # tilec kernels by name, made on first use


def kernel(name, file, **consts):
    key = (name, tuple(sorted(consts.items())))
    if key not in K:
        K[key] = tilec.kernel(str(ROOT / "kernels" / file), name, **consts)
    return K[key]


def rmsnorm_forward(self, hidden):
    shape = hidden.shape
    x = hidden.reshape(-1, shape[-1])
    y = torch.empty_like(x)
    kernel("rmsnorm", "rmsnorm.tile", T=x.dtype)(x, self.weight, y, float(self.variance_epsilon))
    return y.view(shape)


def mlp_forward(self, x):
    gate, up = self.gate_proj(x), self.up_proj(x)
    g2, u2 = gate.reshape(-1, gate.shape[-1]), up.reshape(-1, up.shape[-1])
    act = torch.empty_like(g2)
    kernel("silu_mul", "silu_mul.tile", T=x.dtype)(g2, u2, act)
    return self.down_proj(act.view(gate.shape))


def rope(q, k, cos, sin, unsqueeze_dim=1):
    # q [B, H, S, D] and k [B, HKV, S, D] are views of the projections' outputs [B, S, H, D]:
    # the kernel rotates them in place through their transposes (strided views, no copy).
    # The table is sequence 0's rows: every sequence must stand at the same positions (no
    # padding; `generate` below feeds it so). Checking it here would read the GPU at every
    # layer — a synchronisation that stops the launches from running ahead.
    half = q.shape[-1] // 2
    table_cos, table_sin = cos[0, :, :half], sin[0, :, :half]
    heads = 1 << (q.shape[1] - 1).bit_length()
    kv_heads = 1 << (k.shape[1] - 1).bit_length()
    kernel("rope", "rope.tile", T=q.dtype, H=heads, HK=kv_heads, HALF=half)(
        q.transpose(1, 2), k.transpose(1, 2), table_cos, table_sin)
    return q, k


WORKSPACE = {}
LENGTHS = {}


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention interface: query [B, H, S, D], key/value [B, HKV, L, D];
    returns ([B, S, H, D], None)."""
    b, h, s, d = query.shape
    hkv, length = key.shape[1], key.shape[2]
    scale = scaling if scaling is not None else 1.0 / math.sqrt(d)
    if s == length:  # the prefill: causal over the prompt
        out = torch.empty_like(query)
        kernel("fmha", "fmha.tile", T=query.dtype, H=h, GROUP=h // hkv, TILE_D=d, CAUSAL=True)(
            query, key, value, out, float(scale))
        return out.transpose(1, 2), None
    if s != 1:
        raise ValueError(f"{s} new tokens against {length} cached: only a prefill or one token a step")
    if (b, hkv) not in WORKSPACE:
        WORKSPACE[(b, hkv)] = (
            torch.empty(b, hkv, 32, 8, d, device=query.device, dtype=torch.float32),
            torch.empty(b, hkv, 32, 2, 8, device=query.device, dtype=torch.float32),
            torch.zeros(b, hkv, device=query.device, dtype=torch.int32),  # the kernel leaves it zero
        )
    o_part, stats, count = WORKSPACE[(b, hkv)]
    # The lengths of this step, made once for all its layers (a fill is a launch too).
    if LENGTHS.get("key") != (b, length):
        LENGTHS["key"], LENGTHS["lens"] = (b, length), torch.full((b,), length, device=query.device, dtype=torch.int32)
    lens = LENGTHS["lens"]
    out = torch.empty(b, h, d, device=query.device, dtype=query.dtype)
    kernel("attention_decode_grouped", "attention_decode_grouped.tile", T=query.dtype, G=h // hkv, D=d)(
        query[:, :, 0, :], key, value, out, lens, o_part, stats, count, float(scale))
    return out.view(b, 1, h, d), None


def patch(model):
    """Replaces the modules; returns what was replaced."""
    modeling_qwen2.Qwen2RMSNorm.forward = rmsnorm_forward
    modeling_qwen2.Qwen2MLP.forward = mlp_forward
    modeling_qwen2.apply_rotary_pos_emb = rope
    transformers.AttentionInterface.register("tilec", attention)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("tilec")
    else:  # transformers before the setter: the configuration's field, read at every forward
        model.config._attn_implementation = "tilec"
    return ["Qwen2RMSNorm.forward", "Qwen2MLP.forward (silu·mul)", "apply_rotary_pos_emb", "attention: 'tilec'"]


def rel_l2(a, b):
    return ((a - b).flatten(1).norm(dim=1) / b.flatten(1).norm(dim=1)).cpu().numpy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    cfg = config(a.layers)
    model = build(cfg, a.seed, modeling_qwen2.Qwen2ForCausalLM)
    g = torch.Generator(device="cuda").manual_seed(a.seed + 1)
    prompt = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt_len), device="cuda", generator=g)

    ref_logits, ref_tokens, ref_prefill, ref_decode = greedy(model, prompt, a.new_tokens)
    print(f"unpatched: prefill {ref_prefill * 1e3:.1f} ms, decode {ref_decode * 1e3:.1f} ms", flush=True)
    replaced = patch(model)
    print(f"patched: {', '.join(replaced)}", flush=True)
    tl_logits, tl_tokens, tl_prefill, tl_decode = greedy(model, prompt, a.new_tokens)
    print(f"patched: prefill {tl_prefill * 1e3:.1f} ms, decode {tl_decode * 1e3:.1f} ms", flush=True)
    # The patched model fed the unpatched run's tokens: every step on the same inputs as the
    # fp32 reference's.
    tl_forced = forced_logits(model, prompt, ref_tokens)
    # The fp32 reference on transformers' own modules (reloaded: the patch replaced them), the
    # same weights.
    import importlib
    importlib.reload(modeling_qwen2)
    with torch.device("cuda"):
        ref_model = modeling_qwen2.Qwen2ForCausalLM(cfg).float()
    ref_model.load_state_dict(model.state_dict())
    ref_model.eval()
    if hasattr(ref_model, "set_attn_implementation"):
        ref_model.set_attn_implementation("eager")
    else:
        ref_model.config._attn_implementation = "eager"
    del model
    torch.cuda.empty_cache()
    fp32 = forced_logits(ref_model, prompt, ref_tokens)
    # The bound of examples/qwen2, at every step and for every sequence: the patched logits'
    # relative L2 distance from fp32's within 2x that of transformers' own fp16 logits.
    hf = np.stack([rel_l2(ref_logits[t], fp32[t]) for t in range(a.new_tokens)])
    ours = np.stack([rel_l2(tl_forced[t], fp32[t]) for t in range(a.new_tokens)])
    ratio = ours / hf
    within = bool((ratio <= 2.0).all())
    agree = int((tl_tokens == ref_tokens).sum().item())
    result = {
        "device": torch.cuda.get_device_name(), "transformers": transformers.__version__, "torch": torch.__version__,
        "tilec": tilec.__version__, "layers": a.layers, "batch": a.batch, "prompt_len": a.prompt_len,
        "new_tokens": a.new_tokens, "replaced": replaced,
        "unpatched": {"prefill_ms": ref_prefill * 1e3, "decode_ms": ref_decode * 1e3,
                      "decode_tokens_per_s": a.batch * (a.new_tokens - 1) / ref_decode},
        "patched": {"prefill_ms": tl_prefill * 1e3, "decode_ms": tl_decode * 1e3,
                    "decode_tokens_per_s": a.batch * (a.new_tokens - 1) / tl_decode},
        "tokens_agreeing": f"{agree} of {tl_tokens.numel()} (the patched model generating on its own)",
        "rel_l2_vs_fp32_transformers_fp16_per_step": hf.mean(1).tolist(),
        "rel_l2_vs_fp32_patched_per_step": ours.mean(1).tolist(),
        "worst_ratio": float(ratio.max()),
        "within_bound": within,
    }
    (a.out / "patched.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("rel_l2")}, indent=1), flush=True)
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
