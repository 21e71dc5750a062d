//! A DeepSeek-V2-Lite-shaped decoder (Multi-head Latent Attention and DeepSeekMoE) generating
//! tokens on tilec kernels alone (issue 31), checked against Hugging Face transformers.
//!
//! `examples/deepseek_v2/reference.py --out DIR` makes the random fp16 weights (safetensors), a
//! prompt, and transformers' logits and tokens of every step; this program loads the weights
//! with the `safetensors` crate, runs the prefill and the greedy decode through the `tilec`
//! JIT (every GPU operation a kernel of `kernels/`: see `model.rs` for which), compares every
//! step with transformers, times a clean run (each decode step one CUDA graph replay, or
//! launch by launch with `--no-graph`), breaks one decode step down by kernel, and compares
//! the decode step with its copy floor — the weights it read (the dense ones, the shared
//! experts and the routed experts its tokens went to) and the latent cache:
//!
//! ```sh
//! cargo run --release --example deepseek_v2 -- --weights DIR [--layers N] [--new-tokens N] [--json FILE] [--no-graph] [--prefetch N]
//! ```
//!
//! Without a GPU it says so; a missing file, a configuration other than DeepSeek-V2-Lite's, or
//! a weight of the wrong shape is an error naming it.

#[path = "../common/compare.rs"]
mod compare;
mod config;
#[path = "../common/config_json.rs"]
mod config_json;
#[path = "../common/harness.rs"]
mod harness;
#[macro_use]
#[path = "../common/launch.rs"]
mod launch;
mod model;
#[path = "../common/reference.rs"]
mod reference;

use clap::Parser;
use config::Config;
use launch::{File, Launcher};
use model::{Kernels, Model, Weights};
use reference::secs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tilec::jit::{Jit, KernelSpec};

pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

#[derive(Parser, Debug)]
#[command(about = "A DeepSeek-V2-Lite-shaped decoder on tilec kernels, checked against transformers")]
struct Args {
    /// The folder reference.py wrote: config.json, model.safetensors, prompt.npy, and for the
    /// comparison logits.npy, tokens.npy (and logits_fp32.npy, timing.json).
    #[arg(long)]
    weights: PathBuf,
    /// Run the first N layers only (no comparison unless the weights have N layers).
    #[arg(long)]
    layers: Option<i64>,
    /// Tokens to generate per sequence (default: as many as the reference has, else 50).
    #[arg(long)]
    new_tokens: Option<i64>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Launch each decode step's kernels one by one instead of replaying a CUDA graph.
    #[arg(long)]
    no_graph: bool,
    /// The gate/up products' L2 prefetch depth: the tiles of weights each block of
    /// `matmul_swiglu` announces before the wait for the grid before (its `PREFETCH`;
    /// default: the kernel's own, 0 turns it off).
    #[arg(long)]
    prefetch: Option<i64>,
    /// Leave a pass out of every kernel's pipeline (repeatable): the ablation of a pass on
    /// the whole model, e.g. `tile-grid-dependency`.
    #[arg(long = "disable-pass")]
    disable_pass: Vec<String>,
}

fn main() -> ExitCode {
    harness::exit("deepseek_v2", run(&Args::parse()))
}

fn run(args: &Args) -> Res<bool> {
    let dir = &args.weights;
    let full = Config::from_json(&harness::config_text(dir)?)?;
    let inputs = harness::Inputs::read(dir, full.layers, full.vocab, args.layers, args.new_tokens)?;
    let c = Config { layers: inputs.layers, ..full };
    let (batch, prompt_len, new_tokens) = (inputs.batch, inputs.prompt_len, inputs.new_tokens);

    let jit = Jit::new()?;
    let dev = jit.device();
    println!(
        "deepseek_v2: {} layers of DeepSeek-V2-Lite ({:.2} B parameters), batch {batch}, prompt {prompt_len}, {new_tokens} new tokens, on {}",
        c.layers,
        c.parameters() as f64 / 1e9,
        dev.name
    );
    let map = reference::map_weights(dir)?;
    let st = File(safetensors::SafeTensors::deserialize(&map).map_err(|e| format!("model.safetensors: {e}"))?);
    let mut kernels = Kernels::new(&c);
    if let Some(p) = args.prefetch {
        kernels.matmul_swiglu = launch::with_prefetch(&kernels.matmul_swiglu, p)?;
    }
    let l = Launcher::new(&jit).disable_passes(&args.disable_pass);
    let t = Instant::now();
    let weights = Weights::load(&l, &kernels, &st, &c, |i| {
        if (i + 1) % 4 == 0 || i + 1 == c.layers {
            println!("  loaded layer {}/{}", i + 1, c.layers);
        }
    })?;
    let load_s = secs(t);
    println!("weights: on the device in {load_s:.1} s (transposed by the transpose kernel)");
    let forced = inputs.forced();
    let model = Model::new(&jit, &c, &weights, &inputs.prompt_ids, batch, new_tokens, &forced)?;
    let generator = DeepseekV2 { model: &model, k: &kernels, w: &weights };
    let run = harness::Run {
        dir,
        layers: c.layers,
        vocab: c.vocab,
        batch,
        prompt_len,
        new_tokens,
        load_s,
        no_graph: args.no_graph,
        json: args.json.as_deref(),
        reference: inputs.reference,
    };
    harness::check_and_time(&jit, &l, &generator, &run)
}

/// The decoder with its kernels, as the harness runs it.
struct DeepseekV2<'a> {
    model: &'a Model<'a>,
    k: &'a Kernels,
    w: &'a Weights,
}

impl harness::Generator for DeepseekV2<'_> {
    fn prefill(&self, l: &Launcher<'_>) -> Res<()> {
        self.model.prefill(l, self.k)
    }

    fn decode(&self, l: &Launcher<'_>, t: i64, forced: bool) -> Res<()> {
        self.model.decode(l, self.k, t, forced)
    }

    fn tokens(&self, l: &Launcher<'_>, t: i64) -> Res<Vec<i64>> {
        self.model.tokens(l, t)
    }

    fn logits(&self, l: &Launcher<'_>) -> Res<Vec<f32>> {
        self.model.logits(l)
    }

    /// The fixed weights, the experts the last step's tokens were routed to, the latent cache.
    fn kernels(&self) -> Vec<&KernelSpec> {
        self.k.all()
    }

    fn step_bytes(&self, l: &Launcher<'_>, len: i64) -> Res<(f64, f64)> {
        let experts = self.model.experts_read(l)?;
        println!("the profiled decode step read {experts} routed experts over its MoE layers");
        Ok((self.w.fixed_bytes + experts as f64 * self.w.expert_bytes, self.model.kv_bytes(len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn folder(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tilec-deepseek-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn args(dir: &Path) -> Args {
        Args {
            weights: dir.to_path_buf(),
            layers: None,
            new_tokens: None,
            json: None,
            no_graph: false,
            prefetch: None,
            disable_pass: vec![],
        }
    }

    #[test]
    fn missing_files_a_config_mismatch_and_no_gpu_are_errors_that_say_so() {
        let d = folder("errors");
        let e = run(&args(&d)).unwrap_err().to_string();
        assert!(e.contains("cannot read") && e.contains("config.json") && e.contains("reference.py"), "{e}");
        let cfg = serde_json::json!({
            "model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 2, "num_attention_heads": 16,
            "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "intermediate_size": 10944, "moe_intermediate_size": 1408,
            "first_k_dense_replace": 1, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
            "vocab_size": 102400, "rms_norm_eps": 1e-6, "routed_scaling_factor": 1.0, "topk_method": "greedy",
            "norm_topk_prob": false, "tie_word_embeddings": false,
            "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0,
                "mscale": 0.707, "mscale_all_dim": 0.707},
        });
        std::fs::write(
            d.join("config.json"),
            cfg.to_string().replace("\"num_attention_heads\":16", "\"num_attention_heads\":32"),
        )
        .unwrap();
        let e = run(&args(&d)).unwrap_err().to_string();
        assert!(e.contains("`num_attention_heads` is 32, DeepSeek-V2-Lite's is 16"), "{e}");
        std::fs::write(d.join("config.json"), cfg.to_string()).unwrap();
        let e = run(&Args { layers: Some(3), ..args(&d) }).unwrap_err().to_string();
        assert!(e.contains("--layers 3: the weights have 2 layers"), "{e}");
        let e = run(&args(&d)).unwrap_err().to_string();
        assert!(e.contains("prompt.npy"), "{e}");
        let prompt = tilec::runtime::HostTensor::from_f64(tilec::DType::I64, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        std::fs::write(d.join("prompt.npy"), tilec::npy::write(&prompt)).unwrap();
        let e = run(&args(&d)).unwrap_err().to_string();
        if tilec::runtime::driver_available().is_ok() {
            // A GPU machine gets as far as the weights.
            assert!(e.contains("model.safetensors"), "{e}");
        } else {
            assert!(e.contains("no NVIDIA driver"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
