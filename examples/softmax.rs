//! Softmax through the JIT API: compile on first use (cached), launch on device tensors,
//! check every row against a CPU softmax. Needs an NVIDIA GPU; without one it says so.
//!
//! `cargo run --release --example softmax -- [ROWS] [COLS]` (default 64 × 1000: 1000 f32
//! columns are 4000 bytes, a multiple of 16, so the vectorised variant runs; try 999 for the
//! scalar one).

use tilec::jit::{Arg, Jit, KernelSpec};
use tilec::runtime::HostTensor;
use tilec::{ConstArg, DType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut dims = std::env::args().skip(1).map(|a| a.parse::<i64>());
    let rows = dims.next().transpose()?.unwrap_or(64);
    let cols = dims.next().transpose()?.unwrap_or(1000);
    let jit = Jit::new()?;
    // One block a row, the whole row in registers: BLOCK_N must cover it (a power of two).
    let block_n = (cols.max(16) as u64).next_power_of_two() as i64;
    let spec = KernelSpec::from_file(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/softmax.tile"))?
        .constant("T", ConstArg::DType(DType::F32))
        .constant("BLOCK_N", ConstArg::Int(block_n));
    let n = (rows * cols) as usize;
    // Deterministic inputs in [-4, 4).
    let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 8000) as f64 / 1000.0 - 4.0).collect();
    let dx = jit.device().upload(&HostTensor::from_f64(DType::F32, &[rows, cols], &x))?;
    let dy = jit.device().upload(&HostTensor::from_f64(DType::F32, &[rows, cols], &vec![0.0; n]))?;
    let t = std::time::Instant::now();
    let info = jit.launch(&spec, &[Arg::Tensor(&dx), Arg::Tensor(&dy)])?;
    jit.device().synchronize()?;
    let first = t.elapsed();
    let t = std::time::Instant::now();
    jit.launch(&spec, &[Arg::Tensor(&dx), Arg::Tensor(&dy)])?;
    jit.device().synchronize()?;
    let second = t.elapsed();
    let y = jit.device().download(&dy)?.to_f64();
    let mut worst: f64 = 0.0;
    for r in 0..rows as usize {
        let row = &x[r * cols as usize..(r + 1) * cols as usize];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for (c, v) in row.iter().enumerate() {
            worst = worst.max(((v - m).exp() / s - y[r * cols as usize + c]).abs());
        }
    }
    println!(
        "softmax {rows}x{cols} f32 on {}: max abs error {worst:.2e}; first launch {:.1} ms (compile or cache), second {:.3} ms; {}",
        jit.device().name,
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e3,
        if info.unaligned.is_empty() { "vectorised variant".to_string() } else { format!("scalar variant for {:?}", info.unaligned) }
    );
    if worst > 1e-5 {
        return Err(format!("max abs error {worst:.2e} over 1e-5").into());
    }
    // A wrong argument is an error naming it, and nothing is launched.
    let bad = jit.device().upload(&HostTensor::from_f64(DType::F16, &[rows, cols], &vec![0.0; n]))?;
    match jit.launch(&spec, &[Arg::Tensor(&dx), Arg::Tensor(&bad)]) {
        Err(e) => println!("a f16 output for an f32 kernel: {e}"),
        Ok(_) => return Err("a wrong dtype was launched".into()),
    }
    Ok(())
}
