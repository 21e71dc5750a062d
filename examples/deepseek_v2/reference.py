#!/usr/bin/env python3
"""Weights and reference logits for the DeepSeek-V2-Lite-shaped decoder of issue 31.

No weights can be downloaded: this builds transformers' `DeepseekV2ForCausalLM` from
DeepSeek-V2-Lite's published configuration (hidden 2048, 27 layers, 16 heads, no query
compression, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, the
first layer dense (intermediate 10944), then mixture-of-experts layers of 64 routed experts
(intermediate 1408) and 2 shared ones, 6 experts a token by softmax scoring and greedy top-k,
vocab 102400, RMSNorm eps 1e-6, YaRN RoPE: theta 10000, factor 40 over 4096 positions) with
random weights from a fixed seed, saves them as safetensors, draws a random prompt from the
same seed, and runs transformers on it (eager attention, greedy), saving the logits of every
step:

  OUT/config.json        the configuration (the Rust runner refuses a mismatch)
  OUT/model.safetensors  the weights, fp16, under transformers' names (the experts as 3-D
                         tensors, `mlp.experts.gate_up_proj` [64, 2816, 2048] and
                         `mlp.experts.down_proj` [64, 2048, 1408], where this transformers
                         keeps them so)
  OUT/weights.json       every tensor's name, dtype and shape
  OUT/rope.json          the rotary embedding transformers built: inv_freq and
                         attention_scaling (the runner computes YaRN itself and checks it)
  OUT/prompt.npy         [batch, prompt_len] int64 token ids
  OUT/logits.npy         [new_tokens, batch, vocab] float32: step 0 is the prefill's last
                         position, step t the logits that chose token t
  OUT/tokens.npy         [batch, new_tokens] int64, the greedy tokens
  OUT/logits_fp32.npy    [new_tokens, batch, vocab] float32: the same weights in fp32, fed
                         the fp16 run's tokens (with --layers small enough to fit: 27 layers
                         are 63 GB in fp32, beside the fp16 copy on the CPU)
  OUT/timing.json        wall times of prefill and decode (eager; with --compile also
                         transformers' generate() under torch.compile with a static cache)

Weights are drawn as N(0, 0.02) (transformers' initialiser) except the RMSNorm weights,
N(1, 0.1), and the router, N(0, 0.1) (so that the experts' probabilities differ enough for the
choice to be stable), so that the norm weights are exercised. There are no biases in this
configuration (attention_bias and mlp_bias are false).

`--layers N` builds fewer layers for quick checks (the Rust runner reads N from config.json).
Needs torch, transformers (with DeepseekV2; 4.56 or later), safetensors and numpy.
"""
import argparse
import json
import pathlib
import time

import numpy as np
import torch
from safetensors.torch import save_file
import transformers
from transformers import DeepseekV2Config, DeepseekV2ForCausalLM

YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "original_max_position_embeddings": 4096,
        "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707}


def config(layers: int) -> DeepseekV2Config:
    kw = dict(
        vocab_size=102400,
        hidden_size=2048,
        intermediate_size=10944,
        moe_intermediate_size=1408,
        num_hidden_layers=layers,
        num_attention_heads=16,
        num_key_value_heads=16,
        n_shared_experts=2,
        n_routed_experts=64,
        routed_scaling_factor=1.0,
        kv_lora_rank=512,
        q_lora_rank=None,
        qk_rope_head_dim=64,
        v_head_dim=128,
        qk_nope_head_dim=128,
        topk_method="greedy",
        n_group=1,
        topk_group=1,
        num_experts_per_tok=6,
        first_k_dense_replace=1,
        norm_topk_prob=False,
        max_position_embeddings=163840,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        attention_bias=False,
        bos_token_id=100000,
        eos_token_id=100001,
    )
    try:  # transformers 5: the RoPE parameters in one dict
        cfg = DeepseekV2Config(rope_parameters=dict(YARN), **kw)
    except TypeError:
        cfg = DeepseekV2Config(rope_theta=YARN["rope_theta"],
                               rope_scaling={k: v for k, v in YARN.items() if k != "rope_theta"} | {"type": "yarn"},
                               **kw)
    cfg._attn_implementation = "eager"
    return cfg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--layers", type=int, default=27)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--new-tokens", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-fp32", action="store_true", help="skip the fp32 logits")
    ap.add_argument("--compile", action="store_true",
                    help="also time generate() with torch.compile and a static cache")
    ap.add_argument("--compile-modes", default="reduce-overhead,default",
                    help="torch.compile modes to try in order (the first that works is timed)")
    ap.add_argument("--timing-only", action="store_true",
                    help="save nothing but timing.json (speed does not depend on the weights)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("reference.py needs a CUDA GPU")
    a.out.mkdir(parents=True, exist_ok=True)
    cfg = config(a.layers)
    torch.manual_seed(a.seed)
    t0 = time.time()
    torch.set_default_dtype(torch.float16)
    with torch.device("cuda"):
        model = DeepseekV2ForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    model.eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(1.0, 0.1)
            elif name.endswith("mlp.gate.weight"):
                p.normal_(0.0, 0.1)
            else:
                p.normal_(0.0, 0.02)
    print(f"built {a.layers} layers in {time.time() - t0:.1f} s (transformers {transformers.__version__})", flush=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    shapes = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in state.items()}
    (a.out / "weights.json").write_text(json.dumps(shapes, indent=0))
    rot = model.model.rotary_emb
    (a.out / "rope.json").write_text(json.dumps({
        "inv_freq": rot.inv_freq.float().cpu().tolist(),
        "attention_scaling": float(rot.attention_scaling),
        "rope_type": getattr(rot, "rope_type", None),
    }))
    if not a.timing_only:
        save_file(state, str(a.out / "model.safetensors"))
        (a.out / "config.json").write_text(cfg.to_json_string())
        print(f"saved {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters", flush=True)
    del state

    g = torch.Generator(device="cuda").manual_seed(a.seed + 1)
    prompt = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt_len), device="cuda", generator=g)
    if not a.timing_only:
        np.save(a.out / "prompt.npy", prompt.cpu().numpy())

    logits, tokens = [], []
    with torch.no_grad():
        # A warm-up prefill and decode step, so that the timings leave out the first calls.
        warm = model(prompt[:, :8], use_cache=True)
        model(prompt[:, 8:9], past_key_values=warm.past_key_values, use_cache=True)
        del warm
        torch.cuda.synchronize()
        t0 = time.time()
        out = model(prompt, use_cache=True, logits_to_keep=1)
        torch.cuda.synchronize()
        prefill = time.time() - t0
        past, step = out.past_key_values, out.logits[:, -1, :].float()
        t0 = time.time()
        for t in range(a.new_tokens):
            logits.append(step.cpu().numpy())
            nxt = step.argmax(dim=-1)
            tokens.append(nxt.cpu().numpy())
            if t + 1 == a.new_tokens:
                break
            out = model(nxt[:, None], past_key_values=past, use_cache=True)
            past, step = out.past_key_values, out.logits[:, -1, :].float()
        torch.cuda.synchronize()
        decode = time.time() - t0
        del past, out
    if not a.timing_only:
        np.save(a.out / "logits.npy", np.stack(logits))
        np.save(a.out / "tokens.npy", np.stack(tokens, axis=1))
    timing = {
        "prefill_s": prefill,
        "decode_s": decode,
        "prefill_tokens_per_s": a.batch * a.prompt_len / prefill,
        "decode_tokens_per_s": a.batch * (a.new_tokens - 1) / max(decode, 1e-9),
        "batch": a.batch,
        "prompt_len": a.prompt_len,
        "new_tokens": a.new_tokens,
        "layers": a.layers,
        "device": torch.cuda.get_device_name(),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    if a.compile:
        timing.update(compiled_timing(model, prompt, a.new_tokens, a.compile_modes.split(",")))
    (a.out / "timing.json").write_text(json.dumps(timing, indent=1))
    print(json.dumps(timing), flush=True)
    if not (a.no_fp32 or a.timing_only):
        fp32_logits(model, prompt, np.stack(tokens, axis=1), a.out)


def compiled_timing(model, prompt, new_tokens, modes):
    """transformers' generate() under torch.compile with a static KV cache: CUDA graphs
    ("reduce-overhead") first, plain inductor ("default") if that fails. The prefill is timed
    as generate() of one token, the decode as the rest of generate() of all."""
    model.generation_config.cache_implementation = "static"
    eager_forward = model.forward
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
    errors = {}
    for mode in modes:
        try:
            compiled = torch.compile(eager_forward, mode=mode, fullgraph=False)

            def forward(*args, **kwargs):
                if mode == "reduce-overhead":
                    torch.compiler.cudagraph_mark_step_begin()
                return compiled(*args, **kwargs)

            model.forward = forward

            def gen(n):
                torch.cuda.synchronize()
                t0 = time.time()
                out = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, **kw)
                torch.cuda.synchronize()
                return time.time() - t0, out

            t0 = time.time()
            for _ in range(2):  # compiles the prefill and decode shapes (and records graphs)
                gen(new_tokens)
            warm = time.time() - t0
            prefill = min(gen(1)[0] for _ in range(3))
            total, out = gen(new_tokens)
            decode = total - prefill
            b, p = prompt.shape
            return {
                "compile_mode": mode,
                "compile_failed_modes": errors,
                "compile_warmup_s": warm,
                "compile_prefill_s": prefill,
                "compile_decode_s": decode,
                "compile_prefill_tokens_per_s": b * p / prefill,
                "compile_decode_tokens_per_s": b * (new_tokens - 1) / max(decode, 1e-9),
                "compile_generated": int(out.shape[1] - p),
            }
        except Exception as e:  # recorded, not fatal: the eager reference stands without it
            errors[mode] = f"{type(e).__name__}: {e}"[:600]
            torch._dynamo.reset()
        finally:
            model.forward = eager_forward
    return {"compile_error": errors}


def fp32_logits(model, prompt, tokens, out):
    """The same model in fp32, fed the fp16 run's tokens: logits_fp32.npy."""
    model.float()
    torch.cuda.empty_cache()
    logits = []
    with torch.no_grad():
        res = model(prompt, use_cache=True, logits_to_keep=1)
        past = res.past_key_values
        logits.append(res.logits[:, -1, :].float().cpu().numpy())
        toks = torch.from_numpy(tokens).to(prompt.device)
        for t in range(tokens.shape[1] - 1):
            res = model(toks[:, t:t + 1], past_key_values=past, use_cache=True)
            past = res.past_key_values
            logits.append(res.logits[:, -1, :].float().cpu().numpy())
    np.save(out / "logits_fp32.npy", np.stack(logits))
    print("saved the fp32 logits", flush=True)


if __name__ == "__main__":
    main()
