//! The autotuner's decisions, apart from the GPU: which configurations of a kernel's `tune`
//! space to try, how timings become one figure, which configuration wins, and the record
//! that persists the choice (with every failure kept as data: a configuration that does not
//! compile, launch or agree with the first one is listed with its reason, never dropped).
//!
//! A record is one JSON file, `DIR/v1/tune/<digest>.json` of the compilation cache's folder,
//! keyed by the kernel's canonical source hash, kernel name, the constants not tuned, the
//! target, the tilec build and the shape bucket of the arguments (every extent rounded up to a
//! power of two, so 1000 and 1024 rows share a choice).

use crate::cache::{write_atomically, CacheKey};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One point of the space: constant name → value, as the CLI spells it (`128`, `true`).
pub type Config = BTreeMap<String, String>;

/// Every combination of the candidates, in declaration order (the first candidate of each
/// constant first), at most `limit` of them.
pub fn configs(space: &[(String, Vec<String>)], limit: usize) -> Vec<Config> {
    let mut out: Vec<Config> = vec![Config::new()];
    for (name, cands) in space {
        let mut next = vec![];
        for c in &out {
            for v in cands {
                let mut c = c.clone();
                c.insert(name.clone(), v.clone());
                next.push(c);
            }
        }
        out = next;
        if out.len() > limit {
            out.truncate(limit);
        }
    }
    out
}

/// The compiler's errors for a block that needs more than the target has: shared memory per
/// block (E0020), rings past it (E0022), blocks per SM the occupancy hint asks for (E0025).
pub const RESOURCE_ERRORS: [&str; 3] = ["E0020", "E0022", "E0025"];

/// Whether configuration `c` needs at least what `failed` needs: the same value for every
/// constant that is not an integer, an integer at least as large for every one that is. Tile
/// sizes, stages (`latency`), warps and blocks per SM only add to a block's shared memory and
/// threads, so a configuration that failed a resource check rules out every configuration
/// that dominates it: the tuner records those as pruned instead of compiling them (the
/// failure is a constraint on the space, not a lost point).
pub fn dominates(c: &Config, failed: &Config) -> bool {
    failed.iter().all(|(k, fv)| match (c.get(k), fv.parse::<i64>()) {
        (Some(cv), Ok(f)) => cv.parse::<i64>().is_ok_and(|x| x >= f),
        (Some(cv), Err(_)) => cv == fv,
        (None, _) => false,
    }) && c.len() == failed.len()
}

/// What happened to one configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Timed: the robust median (see [`robust_median`]) and how many samples, in ms.
    Timed {
        /// The robust median, in ms.
        median_ms: f64,
        /// The samples taken.
        samples: usize,
    },
    /// Did not get to timing: `stage` (`frontend`, `require`, `feasibility` — the compiler's
    /// shared-memory and occupancy checks against the target, run through the lowering only,
    /// before LLVM and ptxas —, `pruned` — it dominates a configuration that failed those
    /// checks (see [`dominates`]) and was not compiled —, `compile`, `resources` — not one
    /// block fits an SM by the driver's occupancy calculator, checked before launching —,
    /// `launch`) and the reason: the constraint the space learned.
    Failed {
        /// Where it stopped.
        stage: String,
        /// Why, as the compiler, the runtime or the driver said it.
        reason: String,
    },
    /// Ran, but its outputs differ from the first configuration's (relative L2 error).
    Mismatch {
        /// Its outputs' relative L2 error against the first configuration's.
        rel_l2: f64,
    },
}

/// The median of the samples after the slowest tenth is dropped (interference: a clock
/// change, another process), in the spirit of the CUTLASS profiler's guidance.
pub fn robust_median(samples: &[f64]) -> f64 {
    let mut s: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let keep = s.len() - s.len() / 10;
    s.truncate(keep.max(1));
    s[s.len() / 2]
}

/// The fastest timed configuration, if any ran and agreed.
pub fn select(results: &[(Config, Outcome)]) -> Option<usize> {
    results
        .iter()
        .enumerate()
        .filter_map(|(i, (_, o))| match o {
            Outcome::Timed { median_ms, .. } if median_ms.is_finite() => Some((i, *median_ms)),
            _ => None,
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// Every extent rounded up to a power of two, per tensor: `[1024x1024, 4096]`.
pub fn shape_bucket(shapes: &[Vec<i64>]) -> String {
    let b: Vec<String> = shapes
        .iter()
        .map(|s| s.iter().map(|&d| (d.max(1) as u64).next_power_of_two().to_string()).collect::<Vec<_>>().join("x"))
        .collect();
    format!("[{}]", b.join(", "))
}

/// A persisted tuning result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The fields it is filed under (source hash, kernel, fixed constants, target, build,
    /// shape bucket).
    pub key: CacheKey,
    /// The winning configuration.
    pub best: Config,
    /// The best configuration's robust median, in ms.
    pub best_ms: f64,
    /// Every configuration tried, with what happened.
    pub results: Vec<(Config, Outcome)>,
    /// Provenance: the device it was timed on.
    pub device: String,
    /// The tilec version that timed it.
    pub tilec_version: String,
    /// When, in seconds since the Unix epoch.
    pub unix_time: u64,
    /// The shapes it was timed on (the bucket's representative).
    pub shapes: String,
}

fn record_path(dir: &Path, key: &CacheKey) -> PathBuf {
    dir.join("v1").join("tune").join(format!("{}.json", key.digest()))
}

/// The record filed under `key` in the cache folder `dir`, if there is a readable one.
pub fn load(dir: &Path, key: &CacheKey) -> Option<Record> {
    let text = std::fs::read_to_string(record_path(dir, key)).ok()?;
    let r: Record = serde_json::from_str(&text).ok()?;
    (r.key == *key).then_some(r)
}

/// Files `r` (temporary file and rename); the path written.
pub fn save(dir: &Path, r: &Record) -> std::io::Result<PathBuf> {
    let path = record_path(dir, &r.key);
    write_atomically(&path, serde_json::to_string_pretty(r).unwrap_or_default().as_bytes())?;
    Ok(path)
}

/// Whether an outcome holds for its configuration alone, whatever else the space holds: a
/// timing, or a failure of the configuration itself (its frontend, `require`, resource,
/// compile or occupancy checks). Not a pruning (another configuration's failure), a mismatch
/// (judged against that run's first configuration) or a launch failure (may be the machine's).
pub fn reusable(o: &Outcome) -> bool {
    match o {
        Outcome::Timed { median_ms, .. } => median_ms.is_finite(),
        Outcome::Failed { stage, .. } => {
            matches!(stage.as_str(), "frontend" | "require" | "feasibility" | "compile" | "resources")
        }
        Outcome::Mismatch { .. } => false,
    }
}

/// One configuration's outcome as filed, under its own key (see `tilec::cache::measure_key`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The fields it is filed under.
    pub key: CacheKey,
    /// What happened.
    pub outcome: Outcome,
}

fn measurement_path(dir: &Path, key: &CacheKey) -> PathBuf {
    dir.join("v1").join("tune").join("measured").join(format!("{}.json", key.digest()))
}

/// The outcome filed under `key` in the cache folder `dir`, if there is a readable one.
pub fn load_measurement(dir: &Path, key: &CacheKey) -> Option<Outcome> {
    let text = std::fs::read_to_string(measurement_path(dir, key)).ok()?;
    let m: Measurement = serde_json::from_str(&text).ok()?;
    (m.key == *key && reusable(&m.outcome)).then_some(m.outcome)
}

/// Files one configuration's outcome (only a [`reusable`] one; `None` otherwise).
pub fn save_measurement(dir: &Path, key: &CacheKey, outcome: &Outcome) -> Option<std::io::Result<PathBuf>> {
    if !reusable(outcome) {
        return None;
    }
    let path = measurement_path(dir, key);
    let m = Measurement { key: key.clone(), outcome: outcome.clone() };
    Some(write_atomically(&path, serde_json::to_string_pretty(&m).unwrap_or_default().as_bytes()).map(|_| path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration's timing or its own failure is filed and found under its key (another
    /// key finds nothing); a pruning, a mismatch or a launch failure is never filed.
    #[test]
    fn measurements_are_filed_per_configuration() {
        let d = tempfile::tempdir().unwrap();
        let key = CacheKey::new().field("kernel", "matmul").field("config", "TILE_N=128");
        let timed = Outcome::Timed { median_ms: 0.25, samples: 50 };
        assert!(save_measurement(d.path(), &key, &timed).unwrap().is_ok());
        assert_eq!(load_measurement(d.path(), &key), Some(timed));
        assert_eq!(load_measurement(d.path(), &key.clone().field("device", "other")), None);
        let failed = |stage: &str| Outcome::Failed { stage: stage.into(), reason: "E0022".into() };
        let key2 = key.clone().field("config", "TILE_N=256");
        assert!(save_measurement(d.path(), &key2, &failed("feasibility")).is_some());
        assert_eq!(load_measurement(d.path(), &key2), Some(failed("feasibility")));
        for o in [failed("pruned"), failed("launch"), Outcome::Mismatch { rel_l2: 0.5 }] {
            assert!(!reusable(&o) && save_measurement(d.path(), &key, &o).is_none(), "{o:?}");
        }
    }

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_resource_failure_rules_out_the_configurations_that_need_more() {
        let failed = cfg(&[("TILE_M", "128"), ("TILE_N", "256"), ("WARP_SPECIALIZE", "false")]);
        let bigger = cfg(&[("TILE_M", "256"), ("TILE_N", "256"), ("WARP_SPECIALIZE", "false")]);
        let smaller = cfg(&[("TILE_M", "64"), ("TILE_N", "256"), ("WARP_SPECIALIZE", "false")]);
        let other = cfg(&[("TILE_M", "256"), ("TILE_N", "256"), ("WARP_SPECIALIZE", "true")]);
        assert!(dominates(&bigger, &failed) && dominates(&failed, &failed));
        assert!(!dominates(&smaller, &failed), "a smaller tile may fit");
        assert!(!dominates(&other, &failed), "another choice of a flag is another program");
        assert!(!dominates(&cfg(&[("TILE_M", "256")]), &failed), "another space");
    }

    #[test]
    fn the_space_is_every_combination_in_order() {
        let space = vec![("M".to_string(), vec!["64".into(), "128".into()]), ("N".to_string(), vec!["32".into()])];
        let c = configs(&space, 100);
        assert_eq!(c, vec![cfg(&[("M", "64"), ("N", "32")]), cfg(&[("M", "128"), ("N", "32")])]);
        assert_eq!(configs(&space, 1).len(), 1);
        assert_eq!(configs(&[], 10), vec![Config::new()]);
    }

    #[test]
    fn failures_and_mismatches_never_win() {
        let t = |ms: f64| Outcome::Timed { median_ms: ms, samples: 10 };
        let results = vec![
            (cfg(&[("M", "64")]), t(2.0)),
            (cfg(&[("M", "128")]), Outcome::Mismatch { rel_l2: 0.3 }),
            (cfg(&[("M", "256")]), Outcome::Failed { stage: "compile".into(), reason: "E0022".into() }),
            (cfg(&[("M", "32")]), t(1.5)),
            (cfg(&[("M", "16")]), t(f64::NAN)),
        ];
        assert_eq!(select(&results), Some(3));
        assert_eq!(select(&results[1..3]), None);
    }

    #[test]
    fn the_slowest_tenth_is_dropped_before_the_median() {
        let mut s: Vec<f64> = (1..=20).map(f64::from).collect();
        s.push(1000.0);
        s.push(2000.0);
        // 22 samples: the two outliers go, the median of 1..=20 remains.
        assert_eq!(robust_median(&s), 11.0);
        assert!(robust_median(&[]).is_nan());
        assert_eq!(robust_median(&[3.0]), 3.0);
    }

    #[test]
    fn shapes_share_a_bucket_up_to_the_next_power_of_two() {
        assert_eq!(shape_bucket(&[vec![1000, 1024], vec![4096]]), "[1024x1024, 4096]");
        assert_eq!(shape_bucket(&[vec![1000, 513]]), shape_bucket(&[vec![1024, 1024]]));
    }

    #[test]
    fn a_record_round_trips_and_is_found_by_its_key() {
        let d = tempfile::tempdir().unwrap();
        let key = CacheKey::new().field("kernel", "matmul").field("shapes", "[4096x4096]");
        let r = Record {
            key: key.clone(),
            best: cfg(&[("TILE_N", "128")]),
            best_ms: 0.5,
            results: vec![(cfg(&[("TILE_N", "128")]), Outcome::Timed { median_ms: 0.5, samples: 20 })],
            device: "H100".into(),
            tilec_version: "0.1.0".into(),
            unix_time: 1,
            shapes: "[4096x4096]".into(),
        };
        save(d.path(), &r).unwrap();
        assert_eq!(load(d.path(), &key), Some(r));
        assert_eq!(load(d.path(), &key.clone().field("target", "sm_121a")), None);
    }
}
