//! Integration tests of the compiler, in one binary (each test binary links MLIR and LLVM,
//! so they are kept together to keep CI builds short).

mod bisect;
mod cache;
mod docs;
mod frontend_goldens;
mod opt;
mod passes;
mod stages;
