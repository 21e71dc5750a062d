//! The run a model example makes once its weights are on the device: warm-up, every step
//! checked against transformers (`compare.rs`), a timed run (each decode step a CUDA graph
//! replay, or its launches one by one), one decode step broken down by kernel, the step
//! against its copy floor, and the report (stdout, and JSON on request).

use crate::compare::{self, StepCheck};
use crate::launch::Launcher;
use crate::reference::{self, read, secs, Reference};
use crate::Res;
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;
use tilec::jit::{Graph, Jit, KernelSpec};

/// A model's prefill and greedy decode steps on the device.
pub trait Generator {
    /// The prompt through every layer; the logits of each sequence's last position and their
    /// argmax in token row 0.
    fn prefill(&self, l: &Launcher<'_>) -> Res<()>;
    /// Decode step `t` (1 ≤ t < new tokens): token row t − 1 (ours, or the reference's when
    /// `forced`) in, the logits and token row t out. Launches only: a step is captured as a
    /// CUDA graph and replayed.
    fn decode(&self, l: &Launcher<'_>, t: i64, forced: bool) -> Res<()>;
    /// Token row `t`.
    fn tokens(&self, l: &Launcher<'_>, t: i64) -> Res<Vec<i64>>;
    /// The logits as f32, [batch, vocab].
    fn logits(&self, l: &Launcher<'_>) -> Res<Vec<f32>>;
    /// Every kernel the steps launch: compiled side by side before the warm-up's first
    /// launch (`Jit::prepare`).
    fn kernels(&self) -> Vec<&KernelSpec>;
    /// Bytes of weights and of cache the last decode step read, with `len` cached positions
    /// (the weights may depend on the step: the experts its tokens were routed to).
    fn step_bytes(&self, l: &Launcher<'_>, len: i64) -> Res<(f64, f64)>;
}

/// `main`'s exit status for the run's result: 0 when every checked step is within the bound,
/// 1 when one is not, 2 on an error (said on stderr with the program's `name`).
pub fn exit(name: &str, result: Res<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("{name}: the logits are outside the bound (see above)");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("{name}: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// config.json of the weights folder, as text.
pub fn config_text(dir: &Path) -> Res<String> {
    Ok(String::from_utf8(read(dir, "config.json")?).map_err(|_| "config.json is not UTF-8")?)
}

/// What a run reads beside the weights: the layers to run (`--layers`, at most the weights'),
/// the prompt, the reference (only when all the weights' layers run) and the tokens to
/// generate (`--new-tokens`, else the reference's steps, else 50; at least 2).
#[derive(Debug)]
pub struct Inputs {
    pub layers: i64,
    pub batch: i64,
    pub prompt_len: i64,
    pub prompt_ids: Vec<i64>,
    pub reference: Option<Reference>,
    pub new_tokens: i64,
}

impl Inputs {
    pub fn read(
        dir: &Path,
        weights_layers: i64,
        vocab: i64,
        layers: Option<i64>,
        new_tokens: Option<i64>,
    ) -> Res<Inputs> {
        let layers = layers.unwrap_or(weights_layers);
        if !(1..=weights_layers).contains(&layers) {
            return Err(format!("--layers {layers}: the weights have {weights_layers} layers").into());
        }
        let (batch, prompt_len, prompt_ids) = reference::prompt(dir)?;
        let reference =
            if layers == weights_layers { Reference::load(dir, batch as usize, vocab as usize)? } else { None };
        let new_tokens = new_tokens.or(reference.as_ref().map(|r| r.steps as i64)).unwrap_or(50);
        if new_tokens < 2 {
            return Err(
                format!("--new-tokens {new_tokens}: at least 2 (the prefill's token and one decode step)").into()
            );
        }
        Ok(Inputs { layers, batch, prompt_len, prompt_ids, reference, new_tokens })
    }

    /// The tokens to feed once ours diverge from the reference's, [new_tokens, batch].
    pub fn forced(&self) -> Vec<i64> {
        self.reference
            .as_ref()
            .map_or(vec![0; (self.new_tokens * self.batch) as usize], |r| r.forced(self.new_tokens, self.batch))
    }
}

/// What the run reports beside the timings.
#[derive(Debug)]
pub struct Run<'a> {
    /// The folder of the weights (its timing.json holds transformers' timings).
    pub dir: &'a Path,
    pub layers: i64,
    pub vocab: i64,
    pub batch: i64,
    pub prompt_len: i64,
    pub new_tokens: i64,
    pub load_s: f64,
    pub no_graph: bool,
    pub json: Option<&'a Path>,
    pub reference: Option<Reference>,
}

/// Runs decode steps: as replays of one CUDA graph of the step's launches, or launch by launch.
struct Decoder<'a, 'j> {
    jit: &'j Jit,
    l: &'a Launcher<'j>,
    g: &'a dyn Generator,
    graph: Option<Graph>,
}

impl Decoder<'_, '_> {
    /// Makes step `t`'s launches current: the graph updated with its arguments (they differ
    /// from the last step's in positions and rows only), or, without a graph, launched.
    fn prepare(&mut self, t: i64, forced: bool) -> Res<()> {
        let (l, g) = (self.l, self.g);
        match &mut self.graph {
            Some(graph) => self.jit.update(graph, || g.decode(l, t, forced)),
            None => g.decode(l, t, forced),
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

/// Warms up, checks every step against the reference (when there is one), times a clean run
/// and reports; true when every checked step is within the bound.
pub fn check_and_time(jit: &Jit, l: &Launcher<'_>, g: &dyn Generator, run: &Run<'_>) -> Res<bool> {
    let dev = jit.device();
    let (batch, prompt_len, new_tokens) = (run.batch, run.prompt_len, run.new_tokens);
    let load_s = run.load_s;
    // Warm-up: every kernel compiled (or found in the cache) — side by side on the cores —
    // and loaded.
    let t = Instant::now();
    let kernels = g.kernels();
    for r in jit.prepare(&kernels)? {
        r?;
    }
    let compile_s = secs(t);
    g.prefill(l)?;
    g.decode(l, 1, false)?;
    dev.synchronize()?;
    let warm_s = secs(t);
    println!(
        "warm-up (compile or cache, load, one prefill and decode step): {warm_s:.1} s, {} kernel launch sites; {} kernels compiled or found in {compile_s:.1} s on up to {} threads",
        l.bound(),
        kernels.len(),
        tilec::parallel::threads()
    );
    let mut decoder = Decoder { jit, l, g, graph: None };
    if !run.no_graph {
        let t = Instant::now();
        let g = jit.capture(|| g.decode(l, 1, false))?;
        println!("decode step captured as a CUDA graph of {} launches in {:.1} ms", g.len(), secs(t) * 1e3);
        decoder.graph = Some(g);
    }

    // The checked run: every step's logits against transformers'. Once one of our tokens
    // differs, the reference's tokens are fed, so that every later step compares logits of the
    // same inputs.
    let mut checks: Vec<StepCheck> = vec![];
    let mut first_divergence: Option<usize> = None;
    if let Some(r) = &run.reference {
        println!("\ncomparison with transformers (fp16 eager), step by step:");
        let (b, v) = (batch as usize, run.vocab as usize);
        let steps = (new_tokens as usize).min(r.steps);
        for s in 0..steps {
            if s == 0 {
                g.prefill(l)?;
            } else {
                decoder.step(s as i64, first_divergence.is_some())?;
            }
            let ours = g.logits(l)?;
            let toks = g.tokens(l, s as i64)?;
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
    g.prefill(l)?;
    let first = g.tokens(l, 0)?;
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
        let toks = g.tokens(l, s)?;
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
        let graph = if decoder.graph.is_some() { None } else { Some(jit.capture(|| g.decode(l, 1, false))?) };
        let mut other = Decoder { jit, l, g, graph };
        g.prefill(l)?;
        g.tokens(l, 0)?;
        let t = Instant::now();
        for s in 1..new_tokens {
            other.step(s, false)?;
            g.tokens(l, s)?;
        }
        secs(t) * 1e3 / (new_tokens - 1) as f64
    };
    let prefill_tps = (batch * prompt_len) as f64 / prefill_s;
    let decode_tps = (batch * (new_tokens - 1)) as f64 / decode_s;
    let step_ms = decode_s * 1e3 / (new_tokens - 1) as f64;

    // One decode step (the last, the longest KV cache) kernel by kernel.
    l.start_profile();
    g.decode(l, new_tokens - 1, false)?;
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
    // What the profiled step read (its routing decides which experts, in a mixture of experts).
    let (weight_bytes, kv_bytes) = g.step_bytes(l, mean_len as i64)?;
    let floor_ms = (weight_bytes + kv_bytes) / (bw * 1e9) * 1e3;
    let pass = checks.iter().all(StepCheck::within_bound);

    let timing: Option<serde_json::Value> =
        std::fs::read_to_string(run.dir.join("timing.json")).ok().and_then(|t| serde_json::from_str(&t).ok());
    let theirs = |k: &str| timing.as_ref().and_then(|t| t.get(k)).and_then(serde_json::Value::as_f64);
    println!("\n| batch {batch}, prompt {prompt_len}, {new_tokens} new tokens, {} layers | prefill tokens/s | decode tokens/s | decode step ms |", run.layers);
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
        weight_bytes / 1e9,
        kv_bytes / 1e9,
        batch as f64 / floor_ms * 1e3
    );
    if run.reference.is_some() {
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

    if let Some(out) = run.json {
        let report = json!({
            "device": dev.name,
            "layers": run.layers,
            "batch": batch,
            "prompt_len": prompt_len,
            "new_tokens": new_tokens,
            "load_s": load_s,
            "warmup_s": warm_s,
            "warmup_compile_s": compile_s,
            "prefill_s": prefill_s,
            "decode_s": decode_s,
            "prefill_tokens_per_s": prefill_tps,
            "decode_tokens_per_s": decode_tps,
            "decode_step_ms": step_ms,
            "decode_mode": mode,
            "decode_step_ms_other_mode": other_ms,
            "copy_bandwidth_gb_s": bw,
            "decode_floor_ms": floor_ms,
            "weights_gb": weight_bytes / 1e9,
            "kv_gb": kv_bytes / 1e9,
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
