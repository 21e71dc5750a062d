"""What the model examples' reference.py scripts share once their transformers model is built:
the command line, the prompt, transformers' greedy run (fp16, eager) with every step's logits
and tokens, the fp32 model's logits on those tokens, and wall times — eager, and with
`--compile` transformers' generate() under torch.compile with a static cache.

  OUT/prompt.npy         [batch, prompt_len] int64 token ids
  OUT/logits.npy         [new_tokens, batch, vocab] float32: step 0 is the prefill's last
                         position, step t the logits that chose token t
  OUT/tokens.npy         [batch, new_tokens] int64, the greedy tokens
  OUT/logits_fp32.npy    [new_tokens, batch, vocab] float32: the same weights in fp32, fed
                         the fp16 run's tokens (the error any fp16 implementation makes is
                         measured against these; the Rust runner's bound is relative to it)
  OUT/timing.json        wall times of prefill and decode
"""
import argparse
import json
import pathlib
import time

import numpy as np
import torch
import transformers


def parse_args(description: str, layers: int) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--layers", type=int, default=layers)
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
    return a


def run(model, cfg, a, fullgraph: bool = True) -> None:
    """The prompt, transformers' greedy run and its timings, the fp32 logits (see the module)."""
    g = torch.Generator(device="cuda").manual_seed(a.seed + 1)
    prompt = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt_len), device="cuda", generator=g)
    if not a.timing_only:
        np.save(a.out / "prompt.npy", prompt.cpu().numpy())

    logits, tokens, prefill, decode = greedy(model, prompt, a.new_tokens, host=True)
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
        timing.update(compiled_timing(model, prompt, a.new_tokens, a.compile_modes.split(","), fullgraph))
    (a.out / "timing.json").write_text(json.dumps(timing, indent=1))
    print(json.dumps(timing), flush=True)
    if not (a.no_fp32 or a.timing_only):
        fp32_logits(model, prompt, np.stack(tokens, axis=1), a.out)


def greedy(model, prompt, new_tokens, host=False):
    """Greedy generation after a warm-up prefill and decode step (so that the timings leave out
    the first calls): every step's logits (float32; step 0 is the prefill's last position) and
    tokens, the prefill's and the decode's CUDA-synchronised wall times in seconds. With
    `host`, the lists of each step's logits [batch, vocab] and tokens [batch] as NumPy arrays,
    copied at every step inside the timed loop (as the reference runs have always timed it);
    without, tensors on the GPU: logits [steps, batch, vocab] and tokens [batch, steps]."""
    logits, tokens = [], []
    with torch.no_grad():
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
        for t in range(new_tokens):
            logits.append(step.cpu().numpy() if host else step)
            nxt = step.argmax(dim=-1)
            tokens.append(nxt.cpu().numpy() if host else nxt)
            if t + 1 == new_tokens:
                break
            out = model(nxt[:, None], past_key_values=past, use_cache=True)
            past, step = out.past_key_values, out.logits[:, -1, :].float()
        torch.cuda.synchronize()
        decode = time.time() - t0
    if host:
        return logits, tokens, prefill, decode
    return torch.stack(logits), torch.stack(tokens, 1), prefill, decode


def forced_logits(model, prompt, tokens):
    """Every step's logits [steps, batch, vocab] (float32) of `model` fed `tokens` [batch,
    steps] (teacher forcing), as `greedy` numbers its steps."""
    logits = []
    with torch.no_grad():
        res = model(prompt, use_cache=True, logits_to_keep=1)
        past = res.past_key_values
        logits.append(res.logits[:, -1, :].float())
        for t in range(tokens.shape[1] - 1):
            res = model(tokens[:, t:t + 1], past_key_values=past, use_cache=True)
            past = res.past_key_values
            logits.append(res.logits[:, -1, :].float())
    return torch.stack(logits)


def compiled_timing(model, prompt, new_tokens, modes, fullgraph):
    """transformers' generate() under torch.compile with a static KV cache: CUDA graphs
    ("reduce-overhead") first, plain inductor ("default") if that fails. The prefill is timed
    as generate() of one token, the decode as the rest of generate() of all."""
    model.generation_config.cache_implementation = "static"
    eager_forward = model.forward
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
    errors = {}
    for mode in modes:
        try:
            compiled = torch.compile(eager_forward, mode=mode, fullgraph=fullgraph)

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
    torch.cuda.empty_cache()
    logits = forced_logits(model, prompt, torch.from_numpy(tokens).to(prompt.device))
    np.save(out / "logits_fp32.npy", logits.cpu().numpy())
    print("saved the fp32 logits", flush=True)
