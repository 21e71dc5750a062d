//! The JIT API, as docs/jit.md walks through it: every Rust block of that page is a piece of
//! this file (a test checks it), and CI compiles this file (`cargo clippy --all-targets`).
//!
//! `cargo run --release --example jit_tour` on a machine with an NVIDIA GPU of a tilec target
//! (H100/H200, B300, DGX Spark): each step prints what it did and checks its result; without
//! a GPU the first step says so and the program exits with that error.

use tilec::jit::{Arg, Jit, JitError, KernelSpec};
use tilec::runtime::{HostTensor, RuntimeError};
use tilec::{CompileOptions, ConstArg, DType};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // -- open --
    let jit = Jit::new()?; // device 0, the cache of $TILEC_CACHE_DIR (default ~/.cache/tilec)
    println!("{} ({:?})", jit.device().name, jit.device().target()?.name);
    // -- end open --

    // -- spec --
    let softmax = KernelSpec::from_file("kernels/softmax.tile")?
        .kernel("softmax") // the file's only kernel: optional here
        .constant("T", ConstArg::DType(DType::F32))
        .constant("BLOCK_N", ConstArg::Int(1024));
    // -- end spec --

    // -- launch --
    let (rows, cols) = (64, 1000);
    let x = HostTensor::from_fn(DType::F32, &[rows, cols], |i| ((i * 7919) % 8000) as f64 / 1000.0 - 4.0);
    let dx = jit.device().upload(&x)?;
    let dy = jit.device().zeros(DType::F32, &[rows, cols])?;
    let info = jit.launch(&softmax, &[Arg::Tensor(&dx), Arg::Tensor(&dy)])?;
    jit.device().synchronize()?;
    let y = jit.device().download(&dy)?.to_f64();
    println!(
        "variant {} (scalar accesses for {:?}), {:?} blocks an SM",
        info.digest, info.unaligned, info.blocks_per_sm
    );
    // -- end launch --
    let row0: f64 = y[..cols as usize].iter().sum();
    assert!((row0 - 1.0).abs() < 1e-5, "row 0 sums to {row0}");

    // -- view --
    // Rows 8..16 of x, as a tensor of its own: offset in elements, shape, strides.
    let rows_8_16 = dx.view(8 * cols, &[8, cols], &[cols, 1])?;
    let out = jit.device().zeros(DType::F32, &[8, cols])?;
    jit.launch(&softmax, &[Arg::View(&rows_8_16), Arg::Tensor(&out)])?;
    // -- end view --

    // -- errors --
    let wrong = jit.device().zeros(DType::F16, &[rows, cols])?;
    match jit.launch(&softmax, &[Arg::Tensor(&dx), Arg::Tensor(&wrong)]) {
        Err(JitError::Launch(RuntimeError::BadArgument { index, name, reason })) => {
            println!("refused, nothing launched: argument {index} (`{name}`): {reason}")
        }
        other => panic!("a wrong dtype was not refused: {other:?}"),
    }
    let broken = KernelSpec::from_source("broken.tile", "kernel k(x: tensor<f32, 2>) { let y = exp(z); }");
    if let Err(JitError::Compile(rendered)) = jit.launch(&broken, &[Arg::Tensor(&dx)]) {
        println!("{rendered}"); // the diagnostic with its span and code, as the CLI prints it
    }
    // -- end errors --

    // -- prepare --
    // Compile several kernels side by side before their first launches (a model's warm-up).
    let kernels = ["silu_mul", "rmsnorm"].map(|k| {
        KernelSpec::from_file(format!("kernels/{k}.tile")).map(|s| s.constant("T", ConstArg::DType(DType::F32)))
    });
    let [silu_mul, rmsnorm] = kernels;
    for compiled in jit.prepare(&[&silu_mul?, &rmsnorm?])? {
        compiled?; // each spec's own result, in order
    }
    // -- end prepare --

    // -- bind --
    let bound = jit.bind(&softmax, &[Arg::Tensor(&dx), Arg::Tensor(&dy)])?;
    for _step in 0..10 {
        jit.launch_bound(&bound, &[Arg::Tensor(&dx), Arg::Tensor(&dy)])?; // validated, not looked up
    }
    // -- end bind --

    // -- graph --
    let rmsnorm =
        KernelSpec::from_file("kernels/rmsnorm.tile")?.kernel("rmsnorm").constant("T", ConstArg::DType(DType::F32));
    let w = jit.device().upload(&HostTensor::from_f64(DType::F32, &[cols], &vec![1.0; cols as usize]))?;
    let normed = jit.device().zeros(DType::F32, &[rows, cols])?;
    let step = |input: &tilec::runtime::DeviceTensor| -> Result<(), JitError> {
        jit.launch(&rmsnorm, &[Arg::Tensor(input), Arg::Tensor(&w), Arg::Tensor(&normed), Arg::F32(1e-6)])?;
        jit.launch(&softmax, &[Arg::Tensor(&normed), Arg::Tensor(&dy)])?;
        Ok(())
    };
    step(&dx)?; // warm-up: compiled and loaded outside the capture
    let mut graph = jit.capture(|| step(&dx))?; // recorded, not run
    graph.replay()?;
    let dx2 = jit.device().upload(&x)?;
    jit.update(&mut graph, || step(&dx2))?; // the same launches, another input buffer
    graph.replay()?;
    jit.device().synchronize()?;
    // -- end graph --

    // -- tuned --
    // The configuration `tilec tune kernels/matmul.tile --arg …` filed for these shapes, if any.
    let matmul = KernelSpec::from_file("kernels/matmul.tile")?.tuned();
    let a = jit.device().zeros(DType::F16, &[1024, 1024])?;
    let b = jit.device().zeros(DType::F16, &[1024, 1024])?;
    let c = jit.device().zeros(DType::F16, &[1024, 1024])?;
    jit.launch(&matmul, &[Arg::Tensor(&a), Arg::Tensor(&b), Arg::Tensor(&c)])?;
    // -- end tuned --

    // -- options --
    // Pipeline switches (the CLI's flags), and an ahead-of-time compile for another target.
    let fast = KernelSpec::from_file("kernels/softmax.tile")?
        .options(CompileOptions { fast_math: true, ..Default::default() })
        .constant("T", ConstArg::DType(DType::F32));
    jit.launch(&fast, &[Arg::Tensor(&dx), Arg::Tensor(&dy)])?;
    let for_spark = softmax.compile_for("sm_121a")?;
    println!("sm_121a: {} bytes of PTX, {} threads a block", for_spark.ptx().len(), for_spark.signature.block_threads);
    // -- end options --

    jit.device().synchronize()?;
    println!("jit_tour: every step ran");
    Ok(())
}
