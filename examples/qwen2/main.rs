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
//! cargo run --release --example qwen2 -- --weights DIR [--layers N] [--new-tokens N] [--json FILE] [--no-graph]
//! ```
//!
//! Without a GPU it says so; a missing file, a configuration other than Qwen2-7B's, or a
//! weight of the wrong shape is an error naming it.

mod compare;
mod config;
mod model;

use clap::Parser;
use compare::StepCheck;
use config::Config;
use model::{File, Kernels, Launcher, Model, Weights};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use tilec::jit::{Graph, Jit};

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
}

/// Runs decode steps: as replays of one CUDA graph of the step's launches, or launch by launch.
struct Decoder<'a, 'j> {
    jit: &'j Jit,
    l: &'a Launcher<'j>,
    k: &'a Kernels,
    model: &'a Model<'a>,
    graph: Option<Graph>,
}

impl Decoder<'_, '_> {
    /// Makes step `t`'s launches current: the graph updated with its arguments (they differ
    /// from the last step's in positions and rows only), or, without a graph, launched.
    fn prepare(&mut self, t: i64, forced: bool) -> Res<()> {
        let (l, k, model) = (self.l, self.k, self.model);
        match &mut self.graph {
            Some(g) => self.jit.update(g, || model.decode(l, k, t, forced)),
            None => model.decode(l, k, t, forced),
        }
    }

    /// Runs the prepared step (with a graph: one replay; without, it already ran).
    fn run(&self) -> Res<()> {
        if let Some(g) = &self.graph {
            g.replay()?;
        }
        Ok(())
    }

    fn step(&mut self, t: i64, forced: bool) -> Res<()> {
        self.prepare(t, forced)?;
        self.run()
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("qwen2: the logits are outside the bound (see above)");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("qwen2: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn read(dir: &Path, name: &str) -> Res<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p)
        .map_err(|e| format!("cannot read {}: {e} (examples/qwen2/reference.py writes it)", p.display()).into())
}

fn npy(dir: &Path, name: &str) -> Res<tilec::runtime::HostTensor> {
    tilec::npy::read(&read(dir, name)?).map_err(|e| format!("{}: {e}", dir.join(name).display()).into())
}

/// The reference's outputs: tokens [batch, steps], logits [steps, batch, vocab] (and the fp32
/// model's, teacher-forced on the same tokens).
struct Reference {
    tokens: Vec<i64>,
    steps: usize,
    logits: Vec<u8>,
    fp32: Option<Vec<u8>>,
}

impl Reference {
    fn load(dir: &Path, batch: usize, vocab: usize) -> Res<Option<Reference>> {
        if !dir.join("logits.npy").exists() || !dir.join("tokens.npy").exists() {
            return Ok(None);
        }
        let tokens = npy(dir, "tokens.npy")?;
        let [b, steps] = tokens.shape[..] else { return Err("tokens.npy is not [batch, steps]".into()) };
        if b as usize != batch {
            return Err(format!("tokens.npy has {b} sequences, prompt.npy {batch}").into());
        }
        let logits_of = |name: &str| -> Res<Vec<u8>> {
            let t = npy(dir, name)?;
            if t.dtype != tilec::DType::F32 || t.shape != [steps, b, vocab as i64] {
                return Err(format!("{name} is {} {:?}, expected f32 [{steps}, {b}, {vocab}]", t.dtype, t.shape).into());
            }
            Ok(t.data)
        };
        let fp32 = if dir.join("logits_fp32.npy").exists() { Some(logits_of("logits_fp32.npy")?) } else { None };
        Ok(Some(Reference {
            tokens: tokens.to_f64().into_iter().map(|v| v as i64).collect(),
            steps: steps as usize,
            logits: logits_of("logits.npy")?,
            fp32,
        }))
    }

    fn step(bytes: &[u8], step: usize, n: usize) -> Vec<f32> {
        bytes[step * n * 4..(step + 1) * n * 4]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    /// Every sequence's token at `step`.
    fn tokens_at(&self, step: usize) -> Vec<i64> {
        self.tokens.chunks(self.steps).map(|row| row[step]).collect()
    }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn run(args: &Args) -> Res<bool> {
    let dir = &args.weights;
    let text = String::from_utf8(read(dir, "config.json")?).map_err(|_| "config.json is not UTF-8")?;
    let full = Config::from_json(&text)?;
    let mut c = full.clone();
    if let Some(n) = args.layers {
        if !(1..=full.layers).contains(&n) {
            return Err(format!("--layers {n}: the weights have {} layers", full.layers).into());
        }
        c.layers = n;
    }
    let prompt = npy(dir, "prompt.npy")?;
    let [batch, prompt_len] = prompt.shape[..] else { return Err("prompt.npy is not [batch, prompt_len]".into()) };
    let prompt_ids: Vec<i64> = prompt.to_f64().into_iter().map(|v| v as i64).collect();
    let reference =
        if c.layers == full.layers { Reference::load(dir, batch as usize, c.vocab as usize)? } else { None };
    let new_tokens = args.new_tokens.or(reference.as_ref().map(|r| r.steps as i64)).unwrap_or(50);
    if new_tokens < 2 {
        return Err(format!("--new-tokens {new_tokens}: at least 2 (the prefill's token and one decode step)").into());
    }

    let jit = Jit::new()?;
    let dev = jit.device();
    println!(
        "qwen2: {} layers of Qwen2-7B ({:.2} B parameters), batch {batch}, prompt {prompt_len}, {new_tokens} new tokens, on {}",
        c.layers,
        c.parameters() as f64 / 1e9,
        dev.name
    );
    let path = dir.join("model.safetensors");
    let file = std::fs::File::open(&path)
        .map_err(|e| format!("cannot open {}: {e} (examples/qwen2/reference.py writes it)", path.display()))?;
    // SAFETY: the file is only read, and nothing in this process writes it.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map {}: {e}", path.display()))?;
    let st = File(safetensors::SafeTensors::deserialize(&map).map_err(|e| format!("{}: {e}", path.display()))?);

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
    let kernels = Kernels::new(&c, splits);
    let l = Launcher::new(&jit);
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

    let mut forced = vec![0i64; (new_tokens * batch) as usize];
    if let Some(r) = &reference {
        for s in 0..(new_tokens as usize).min(r.steps) {
            for (b, tok) in r.tokens_at(s).into_iter().enumerate() {
                forced[s * batch as usize + b] = tok;
            }
        }
    }
    let model = Model::new(&jit, &c, &weights, &prompt_ids, batch, new_tokens, &forced)?;

    // Warm-up: every kernel compiled (or found in the cache) and loaded.
    let t = Instant::now();
    model.prefill(&l, &kernels)?;
    model.decode(&l, &kernels, 1, false)?;
    dev.synchronize()?;
    let warm_s = secs(t);
    println!(
        "warm-up (compile or cache, load, one prefill and decode step): {warm_s:.1} s, {} kernel launch sites",
        l.bound()
    );
    let mut decoder = Decoder { jit: &jit, l: &l, k: &kernels, model: &model, graph: None };
    if !args.no_graph {
        let t = Instant::now();
        let g = jit.capture(|| model.decode(&l, &kernels, 1, false))?;
        println!("decode step captured as a CUDA graph of {} launches in {:.1} ms", g.len(), secs(t) * 1e3);
        decoder.graph = Some(g);
    }

    // The checked run: every step's logits against transformers'. Once one of our tokens
    // differs, the reference's tokens are fed, so that every later step compares logits of the
    // same inputs.
    let mut checks: Vec<StepCheck> = vec![];
    let mut first_divergence: Option<usize> = None;
    if let Some(r) = &reference {
        println!("\ncomparison with transformers (fp16 eager), step by step:");
        let (b, v) = (batch as usize, c.vocab as usize);
        let steps = (new_tokens as usize).min(r.steps);
        for s in 0..steps {
            if s == 0 {
                model.prefill(&l, &kernels)?;
            } else {
                decoder.step(s as i64, first_divergence.is_some())?;
            }
            let ours = model.logits(&l)?;
            let toks = model.tokens(&l, s as i64)?;
            let fp32 = r.fp32.as_ref().map(|f| Reference::step(f, s, b * v));
            let chk = compare::check_step(
                s,
                v,
                &ours,
                &Reference::step(&r.logits, s, b * v),
                fp32.as_deref(),
                &toks,
                &r.tokens_at(s),
            );
            let agree = b - chk.divergences.len();
            let vs32 = chk
                .rel_l2_fp32
                .map(|(o, t)| format!(", vs fp32 {o:.2e} (transformers fp16 {t:.2e})"))
                .unwrap_or_default();
            println!(
                "  step {s:2}: rel L2 vs transformers {:.2e}{vs32}; tokens agree {agree}/{b}{}",
                chk.rel_l2_fp16,
                if chk.within_bound() { "" } else { "  OUTSIDE THE BOUND" }
            );
            for d in &chk.divergences {
                println!(
                    "           sequence {}: ours {} vs transformers {} — transformers' margin {:.4}, our lead {:.4}",
                    d.sequence, d.ours, d.theirs, d.their_margin, d.our_lead
                );
            }
            if !chk.divergences.is_empty() && first_divergence.is_none() {
                first_divergence = Some(s);
                println!("           (from the next step on, transformers' tokens are fed)");
            }
            checks.push(chk);
        }
    } else {
        println!("no reference logits to compare with (reference.py writes logits.npy and tokens.npy for the weights' layer count)");
    }

    // The timed run: prefill, then greedy decode on our own tokens, a line per token.
    println!("\ntimed run:");
    dev.synchronize()?;
    let t = Instant::now();
    model.prefill(&l, &kernels)?;
    let first = model.tokens(&l, 0)?;
    let prefill_s = secs(t);
    println!("  token  0/{new_tokens}: {:?}… (prefill {:.1} ms)", &first[..first.len().min(6)], prefill_s * 1e3);
    let t = Instant::now();
    let mut last = Instant::now();
    decoder.prepare(1, false)?;
    for s in 1..new_tokens {
        decoder.run()?;
        // The next step's arguments go into the graph while this one runs (an update
        // changes later replays only).
        if decoder.graph.is_some() && s + 1 < new_tokens {
            decoder.prepare(s + 1, false)?;
        }
        let toks = model.tokens(&l, s)?;
        println!(
            "  token {s:2}/{new_tokens}: {:?}… ({:.2} ms)",
            &toks[..toks.len().min(6)],
            last.elapsed().as_secs_f64() * 1e3
        );
        last = Instant::now();
    }
    let decode_s = secs(t);
    // The same steps launch by launch (with a graph above) or replayed (without), for the
    // comparison of the two in one process.
    let other_ms = {
        let graph =
            if decoder.graph.is_some() { None } else { Some(jit.capture(|| model.decode(&l, &kernels, 1, false))?) };
        let mut other = Decoder { jit: &jit, l: &l, k: &kernels, model: &model, graph };
        model.prefill(&l, &kernels)?;
        model.tokens(&l, 0)?;
        let t = Instant::now();
        for s in 1..new_tokens {
            other.step(s, false)?;
            model.tokens(&l, s)?;
        }
        secs(t) * 1e3 / (new_tokens - 1) as f64
    };
    let prefill_tps = (batch * prompt_len) as f64 / prefill_s;
    let decode_tps = (batch * (new_tokens - 1)) as f64 / decode_s;
    let step_ms = decode_s * 1e3 / (new_tokens - 1) as f64;

    // One decode step (the last, the longest KV cache) kernel by kernel.
    l.start_profile();
    model.decode(&l, &kernels, new_tokens - 1, false)?;
    let profile = l.end_profile()?;
    let profiled: f64 = profile.iter().map(|(_, ms, _)| ms).sum();
    println!(
        "\none decode step at {} cached positions, by kernel (CUDA events, summed over the layers):",
        prompt_len + new_tokens - 1
    );
    println!("  | kernel | launches | ms | share |\n  |---|---:|---:|---:|");
    let mut sorted = profile.clone();
    sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (role, ms, n) in &sorted {
        println!("  | {} | {n} | {ms:.3} | {:.1}% |", role.trim_start_matches("decode/"), 100.0 * ms / profiled);
    }
    println!("  | all kernels | | {profiled:.3} | |");

    let bw = dev.copy_bandwidth(1 << 30)?;
    let mean_len = prompt_len as f64 + (new_tokens as f64) / 2.0;
    let floor_ms = (weights.step_bytes + model.kv_bytes(mean_len as i64)) / (bw * 1e9) * 1e3;
    let pass = checks.iter().all(StepCheck::within_bound);

    let timing: Option<serde_json::Value> =
        std::fs::read_to_string(dir.join("timing.json")).ok().and_then(|t| serde_json::from_str(&t).ok());
    let theirs = |k: &str| timing.as_ref().and_then(|t| t.get(k)).and_then(serde_json::Value::as_f64);
    println!("\n| batch {batch}, prompt {prompt_len}, {new_tokens} new tokens, {} layers | prefill tokens/s | decode tokens/s | decode step ms |", c.layers);
    println!("|---|---:|---:|---:|");
    let (mode, other_mode) = if decoder.graph.is_some() { ("graph", "launches") } else { ("launches", "graph") };
    println!("| tilec ({mode}) | {prefill_tps:.0} | {decode_tps:.0} | {step_ms:.2} |");
    println!("| tilec ({other_mode}) | | {:.0} | {other_ms:.2} |", batch as f64 / other_ms * 1e3);
    for (name, key) in [("transformers eager", ""), ("transformers + torch.compile", "compile_")] {
        if let (Some(p), Some(d)) =
            (theirs(&format!("{key}prefill_tokens_per_s")), theirs(&format!("{key}decode_tokens_per_s")))
        {
            println!("| {name} | {p:.0} | {d:.0} | {:.2} |", batch as f64 / d * 1e3);
        }
    }
    println!(
        "| copy floor ({:.2} GB weights + {:.2} GB KV at {bw:.0} GB/s) | | {:.0} | {floor_ms:.2} |",
        weights.step_bytes / 1e9,
        model.kv_bytes(mean_len as i64) / 1e9,
        batch as f64 / floor_ms * 1e3
    );
    if reference.is_some() {
        let worst = checks.iter().map(|c| c.rel_l2_fp16).fold(0.0, f64::max);
        println!(
            "\nlogits: worst rel L2 vs transformers {worst:.2e}; {}; tokens: {}",
            if pass { "every step within the bound" } else { "SOME STEPS OUTSIDE THE BOUND" },
            match first_divergence {
                None => "all agree".to_string(),
                Some(s) => format!("first divergence at step {s}"),
            }
        );
    }

    if let Some(out) = &args.json {
        let report = json!({
            "device": dev.name,
            "layers": c.layers,
            "batch": batch,
            "prompt_len": prompt_len,
            "new_tokens": new_tokens,
            "load_s": load_s,
            "warmup_s": warm_s,
            "prefill_s": prefill_s,
            "decode_s": decode_s,
            "prefill_tokens_per_s": prefill_tps,
            "decode_tokens_per_s": decode_tps,
            "decode_step_ms": step_ms,
            "decode_mode": mode,
            "decode_step_ms_other_mode": other_ms,
            "copy_bandwidth_gb_s": bw,
            "decode_floor_ms": floor_ms,
            "weights_gb": weights.step_bytes / 1e9,
            "profile_step": profile.iter().map(|(r, ms, n)| json!({"kernel": r, "ms": ms, "launches": n})).collect::<Vec<_>>(),
            "checks": checks.iter().map(|c| json!({
                "step": c.step,
                "rel_l2_vs_fp16": c.rel_l2_fp16,
                "rel_l2_vs_fp32": c.rel_l2_fp32.map(|p| p.0),
                "transformers_fp16_vs_fp32": c.rel_l2_fp32.map(|p| p.1),
                "within_bound": c.within_bound(),
                "divergences": c.divergences.iter().map(|d| json!({
                    "sequence": d.sequence, "ours": d.ours, "theirs": d.theirs,
                    "their_margin": d.their_margin, "our_lead": d.our_lead,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "first_divergence": first_divergence,
            "pass": pass,
            "transformers": timing,
        });
        std::fs::write(out, serde_json::to_string_pretty(&report)?)
            .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tilec-qwen2-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn args(dir: &Path) -> Args {
        Args { weights: dir.to_path_buf(), layers: None, new_tokens: None, json: None, no_graph: false, splits: None }
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

    #[test]
    fn reference_files_of_the_wrong_shape_are_refused() {
        let d = folder("reference");
        let tokens = tilec::runtime::HostTensor::from_f64(tilec::DType::I64, &[3, 2], &[0.0; 6]);
        std::fs::write(d.join("tokens.npy"), tilec::npy::write(&tokens)).unwrap();
        std::fs::write(d.join("logits.npy"), tilec::npy::write(&tokens)).unwrap();
        let e = Reference::load(&d, 2, 10).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("tokens.npy has 3 sequences, prompt.npy 2"), "{e}");
        let e = Reference::load(&d, 3, 10).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("logits.npy is i64 [3, 2], expected f32 [2, 3, 10]"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
