//! A Qwen2-7B-shaped decoder generating tokens on tilec kernels alone (issue 15), checked
//! against Hugging Face transformers.
//!
//! `examples/qwen2/reference.py --out DIR` makes the random fp16 weights (safetensors), a
//! prompt, and transformers' logits and tokens of every step; this program loads the weights
//! with the `safetensors` crate, runs the prefill and the greedy decode through the `tilec`
//! JIT (every GPU operation a kernel of `kernels/`, compiled on first use through the cache),
//! compares every step with transformers, times a clean run, breaks one decode step down by
//! kernel, and compares the decode step with the copy floor. Each decode step is one replay
//! of a CUDA graph captured from the step's launches (`Jit::capture`), updated with the step's
//! positions and rows (`Jit::update`); `--no-graph` launches them one by one, and the timed
//! run times both:
//!
//! ```sh
//! cargo run --release --example qwen2 -- --weights DIR [--layers N] [--new-tokens N] [--json FILE] [--no-graph] [--prefetch N]
//! ```
//!
//! Without a GPU it says so; a missing file, a configuration other than Qwen2-7B's, or a
//! weight of the wrong shape is an error naming it.

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
#[command(about = "A Qwen2-7B-shaped decoder on tilec kernels, checked against transformers")]
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
    /// The decode projections' split-K factors, `QKV,O,DOWN` (default: the H200's best,
    /// `model::SPLITS`).
    #[arg(long)]
    splits: Option<String>,
    /// The gate/up product's L2 prefetch depth: the tiles of weights each block of
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
    harness::exit("qwen2", run(&Args::parse()))
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
        "qwen2: {} layers of Qwen2-7B ({:.2} B parameters), batch {batch}, prompt {prompt_len}, {new_tokens} new tokens, on {}",
        c.layers,
        c.parameters() as f64 / 1e9,
        dev.name
    );
    let map = reference::map_weights(dir)?;
    let st = File(safetensors::SafeTensors::deserialize(&map).map_err(|e| format!("model.safetensors: {e}"))?);

    let splits: [i64; 3] = match &args.splits {
        None => model::SPLITS,
        Some(s) => s
            .split(',')
            .map(|v| v.trim().parse::<i64>().ok().filter(|n| (1..=64).contains(n)))
            .collect::<Option<Vec<i64>>>()
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| format!("--splits {s}: three split-K factors from 1 to 64 (Q/K/V, O, down)"))?,
    };
    println!("decode split-K factors (Q/K/V, O, down): {splits:?}");
    let mut kernels = Kernels::new(&c, splits);
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
    println!(
        "weights: {:.2} GB on the device in {load_s:.1} s (transposed by the transpose kernel)",
        weights.step_bytes / 1e9
    );

    let forced = inputs.forced();
    let model = Model::new(&jit, &c, &weights, &inputs.prompt_ids, batch, new_tokens, &forced)?;

    let generator = Qwen2 { model: &model, k: &kernels, step_bytes: weights.step_bytes };
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
struct Qwen2<'a> {
    model: &'a Model<'a>,
    k: &'a Kernels,
    step_bytes: f64,
}

impl harness::Generator for Qwen2<'_> {
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

    fn kernels(&self) -> Vec<&KernelSpec> {
        self.k.all()
    }

    fn step_bytes(&self, _: &Launcher<'_>, len: i64) -> Res<(f64, f64)> {
        Ok((self.step_bytes, self.model.kv_bytes(len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn folder(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tilec-qwen2-{name}-{}", std::process::id()));
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
            splits: None,
            prefetch: None,
            disable_pass: vec![],
        }
    }

    fn config(layers: i64, heads: i64) -> String {
        serde_json::json!({
            "model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": 4, "intermediate_size": 18944,
            "vocab_size": 152064, "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"},
            "tie_word_embeddings": false,
        })
        .to_string()
    }

    #[test]
    fn missing_files_a_config_mismatch_and_no_gpu_are_errors_that_say_so() {
        let d = folder("errors");
        let e = run(&args(&d)).unwrap_err().to_string();
        assert!(e.contains("cannot read") && e.contains("config.json") && e.contains("reference.py"), "{e}");
        std::fs::write(d.join("config.json"), config(2, 32)).unwrap();
        let e = run(&args(&d)).unwrap_err().to_string();
        assert!(e.contains("`num_attention_heads` is 32, Qwen2-7B's is 28"), "{e}");
        std::fs::write(d.join("config.json"), config(2, 28)).unwrap();
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
