//! The files a model example's reference.py writes beside the weights: the prompt, and
//! transformers' tokens and logits of every step (and the fp32 model's).

use crate::Res;
use std::path::Path;
use std::time::Instant;

pub fn read(dir: &Path, name: &str) -> Res<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p)
        .map_err(|e| format!("cannot read {}: {e} (the example's reference.py writes it)", p.display()).into())
}

pub fn npy(dir: &Path, name: &str) -> Res<tilec::runtime::HostTensor> {
    tilec::npy::read(&read(dir, name)?).map_err(|e| format!("{}: {e}", dir.join(name).display()).into())
}

/// The reference's outputs: tokens [batch, steps], logits [steps, batch, vocab] (and the fp32
/// model's, teacher-forced on the same tokens).
#[derive(Debug)]
pub struct Reference {
    pub tokens: Vec<i64>,
    pub steps: usize,
    pub logits: Vec<u8>,
    pub fp32: Option<Vec<u8>>,
}

impl Reference {
    pub fn load(dir: &Path, batch: usize, vocab: usize) -> Res<Option<Reference>> {
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

    pub fn step(bytes: &[u8], step: usize, n: usize) -> Vec<f32> {
        bytes[step * n * 4..(step + 1) * n * 4]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    /// The tokens to feed once ours diverge, [new_tokens, batch] (zeros past the reference's
    /// steps).
    pub fn forced(&self, new_tokens: i64, batch: i64) -> Vec<i64> {
        let mut forced = vec![0i64; (new_tokens * batch) as usize];
        for s in 0..(new_tokens as usize).min(self.steps) {
            for (b, tok) in self.tokens_at(s).into_iter().enumerate() {
                forced[s * batch as usize + b] = tok;
            }
        }
        forced
    }

    /// Every sequence's token at `step`.
    pub fn tokens_at(&self, step: usize) -> Vec<i64> {
        self.tokens.chunks(self.steps).map(|row| row[step]).collect()
    }
}

pub fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// prompt.npy: the batch, the prompt length and the ids ([batch, prompt_len]).
pub fn prompt(dir: &Path) -> Res<(i64, i64, Vec<i64>)> {
    let prompt = npy(dir, "prompt.npy")?;
    let [batch, prompt_len] = prompt.shape[..] else { return Err("prompt.npy is not [batch, prompt_len]".into()) };
    Ok((batch, prompt_len, prompt.to_f64().into_iter().map(|v| v as i64).collect()))
}

/// model.safetensors of `dir`, memory-mapped.
pub fn map_weights(dir: &Path) -> Res<memmap2::Mmap> {
    let path = dir.join("model.safetensors");
    let file = std::fs::File::open(&path)
        .map_err(|e| format!("cannot open {}: {e} (the example's reference.py writes it)", path.display()))?;
    // SAFETY: the file is only read, and nothing in this process writes it.
    Ok(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| format!("cannot map {}: {e}", path.display()))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_files_of_the_wrong_shape_are_refused() {
        let d = std::env::temp_dir().join(format!("tilec-reference-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
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
