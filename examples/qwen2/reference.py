#!/usr/bin/env python3
"""Weights and reference logits for the Qwen2-7B-shaped decoder of issue 15.

No weights can be downloaded: this builds `Qwen2ForCausalLM` from Qwen2-7B's published
configuration (hidden 3584, 28 layers, 28 query and 4 KV heads of dim 128, intermediate
18944, vocab 152064, RMSNorm eps 1e-6, RoPE theta 1e6) with random weights from a fixed
seed, saves them as safetensors, draws a random prompt from the same seed, and runs
transformers on it (fp16, eager attention, greedy) saving the logits of every step:

  OUT/config.json        the configuration (the Rust runner refuses a mismatch)
  OUT/model.safetensors  the weights, fp16, under transformers' names
  and the prompt, transformers' logits and tokens, the fp32 model's logits and the wall
  times as examples/common/hf_run.py writes them (prompt.npy, logits.npy, tokens.npy,
  logits_fp32.npy, timing.json; with --compile also generate() under torch.compile)

Biases and RMSNorm weights are drawn at random too (transformers initialises them to 0 and 1,
which would leave the bias additions and the norm weights untested).

`--layers N` builds fewer layers for quick checks (the Rust runner reads N from config.json).
Needs torch, transformers, safetensors and numpy (the GPU machine has them).
"""
import pathlib
import sys
import time

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
import hf_run  # noqa: E402  (examples/common/hf_run.py: the run both references share)
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


def build(cfg: Qwen2Config, seed: int, model_class=Qwen2ForCausalLM):
    """The fp16 model on the GPU with random weights from `seed`, biases and norm weights drawn
    too (see the module)."""
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.float16)
    with torch.device("cuda"):
        model = model_class(cfg)
    torch.set_default_dtype(torch.float32)
    model.eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, 0.5)
            elif "norm" in name:
                p.normal_(1.0, 0.1)
    return model


def main() -> None:
    a = hf_run.parse_args(__doc__.splitlines()[0], 28)
    cfg = config(a.layers)
    t0 = time.time()
    model = build(cfg, a.seed)
    print(f"built {a.layers} layers in {time.time() - t0:.1f} s", flush=True)
    if not a.timing_only:
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(a.out / "model.safetensors"))
        del state
        (a.out / "config.json").write_text(cfg.to_json_string())
        print(f"saved {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters", flush=True)

    hf_run.run(model, cfg, a)


if __name__ == "__main__":
    main()
