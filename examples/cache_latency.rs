//! Measures the compilation cache through the API: a cold compile, a disk hit (a fresh
//! `Cache`, as a new process sees it) and an in-memory hit, for each kernel given.
//!
//! `cargo run --release --example cache_latency -- kernels/softmax.tile kernels/fmha.tile`
//! (target sm_90a; the cache lives in a temporary folder that is removed afterwards).

use std::time::Instant;
use tilec::runtime::cache::{Cache, DEFAULT_CAP_BYTES};
use tilec::{compile_cached, CompileOptions, Source};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("tilec-cache-latency-{}", std::process::id()));
    let files: Vec<String> = std::env::args().skip(1).collect();
    let opts = CompileOptions { arch: "sm_90a".into(), ..Default::default() };
    println!("| kernel | cold compile ms | disk hit µs (median of 50) | memory hit µs (median of 1000) |");
    println!("|---|---|---|---|");
    for f in &files {
        let source = Source::new(f.clone(), std::fs::read_to_string(f)?);
        let cache = Cache::new(Some(dir.clone()), DEFAULT_CAP_BYTES);
        let t = Instant::now();
        let cold = compile_cached(&source, &opts, &cache)?;
        let cold_ms = t.elapsed().as_secs_f64() * 1e3;
        assert!(cold.hit.is_none());
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let disk: Vec<f64> = (0..50)
            .map(|_| {
                let fresh = Cache::new(Some(dir.clone()), DEFAULT_CAP_BYTES);
                let t = Instant::now();
                let r = compile_cached(&source, &opts, &fresh).map(|c| c.hit);
                let us = t.elapsed().as_secs_f64() * 1e6;
                assert!(matches!(r, Ok(Some(tilec::runtime::cache::Layer::Disk))));
                us
            })
            .collect();
        let mem: Vec<f64> = (0..1000)
            .map(|_| {
                let t = Instant::now();
                let r = compile_cached(&source, &opts, &cache).map(|c| c.hit);
                let us = t.elapsed().as_secs_f64() * 1e6;
                assert!(matches!(r, Ok(Some(tilec::runtime::cache::Layer::Memory))));
                us
            })
            .collect();
        println!("| {f} | {cold_ms:.1} | {:.0} | {:.1} |", median(disk), median(mem));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
