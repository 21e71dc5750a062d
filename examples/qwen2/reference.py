#!/usr/bin/env python3
"""Weights and reference logits for the Qwen2-7B-shaped decoder of issue 15.

No weights can be downloaded: this builds `Qwen2ForCausalLM` from Qwen2-7B's published
configuration (hidden 3584, 28 layers, 28 query and 4 KV heads of dim 128, intermediate
18944, vocab 152064, RMSNorm eps 1e-6, RoPE theta 1e6) with random weights from a fixed
seed, saves them as safetensors, draws a random prompt from the same seed, and runs
transformers on it (fp16, eager attention, greedy) saving the logits of every step:

  OUT/config.json        the configuration (the Rust runner refuses a mismatch)
  OUT/model.safetensors  the weights, fp16, under transformers' names
  OUT/prompt.npy         [batch, prompt_len] int64 token ids
  OUT/logits.npy         [new_tokens, batch, vocab] float32: step 0 is the prefill's last
                         position, step t the logits that chose token t
  OUT/tokens.npy         [batch, new_tokens] int64, the greedy tokens
  OUT/logits_fp32.npy    [new_tokens, batch, vocab] float32: the same weights in fp32, fed
                         the fp16 run's tokens (the error any fp16 implementation makes is
                         measured against these; the Rust runner's bound is relative to it)
  OUT/timing.json        wall times of prefill and decode (eager; with --compile also
                         transformers' generate() under torch.compile with a static cache)

Biases and RMSNorm weights are drawn at random too (transformers initialises them to 0 and 1,
which would leave the bias additions and the norm weights untested).

`--layers N` builds fewer layers for quick checks (the Rust runner reads N from config.json).
Needs torch, transformers, safetensors and numpy (the GPU machine has them).
"""
import argparse
import json
import pathlib
import time

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import Qwen2Config, Qwen2ForCausalLM


def config(layers: int) -> Qwen2Config:
    return Qwen2Config(
        vocab_size=152064,
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=layers,
        num_attention_heads=28,
        num_key_value_heads=4,
        max_position_embeddings=32768,
        rms_norm_eps=1e-6,
        rope_theta=1000000.0,
        tie_word_embeddings=False,
        torch_dtype="float16",
        attn_implementation="eager",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--layers", type=int, default=28)
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
        model = Qwen2ForCausalLM(cfg)
    torch.set_default_dtype(torch.float32)
    model.eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.5)
            elif "norm" in name:
                p.normal_(1.0, 0.1)
    print(f"built {a.layers} layers in {time.time() - t0:.1f} s", flush=True)
    if not a.timing_only:
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(a.out / "model.safetensors"))
        del state
        (a.out / "config.json").write_text(cfg.to_json_string())
        print(f"saved {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters", flush=True)

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
        out = model(prompt, use_cache=True)
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
            compiled = torch.compile(eager_forward, mode=mode, fullgraph=True)

            def forward(*args, **kwargs):
                # A new CUDA-graph step per call: the static cache's tensors are read after
                # the next replay otherwise (transformers 5 + torch 2.11 fail without it).
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
    logits = []
    with torch.no_grad():
        res = model(prompt, use_cache=True)
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
