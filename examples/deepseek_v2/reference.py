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
  and the prompt, transformers' logits and tokens, the fp32 model's logits (27 layers fit
  an H100 in fp32) and the wall times as examples/common/hf_run.py writes them (prompt.npy,
  logits.npy, tokens.npy, logits_fp32.npy, timing.json; with --compile also generate()
  under torch.compile)

Weights are drawn as N(0, 0.02) (transformers' initialiser) except the RMSNorm weights,
N(1, 0.1), and the router, N(0, 0.1) (so that the experts' probabilities differ enough for the
choice to be stable), so that the norm weights are exercised. There are no biases in this
configuration (attention_bias and mlp_bias are false).

`--layers N` builds fewer layers for quick checks (the Rust runner reads N from config.json).
Needs torch, transformers (with DeepseekV2; 4.56 or later), safetensors and numpy.
"""
import json
import pathlib
import sys
import time

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))
import hf_run  # noqa: E402  (examples/common/hf_run.py: the run both references share)
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
    a = hf_run.parse_args(__doc__.splitlines()[0], 27)
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

    hf_run.run(model, cfg, a, fullgraph=False)


if __name__ == "__main__":
    main()
