//! Compiling on several threads. A compile is single-threaded from the frontend to ptxas, so
//! a process with many variants to build — a tuning space, a model's launch sites at warm-up,
//! `tilec cache warm` — builds them side by side, one compile a thread, each thread with its
//! own MLIR context ([`tilec_ir::Mlir::pooled`]) and LLVM context; the compilation cache is
//! shared and locked. [`ahead`] hands the results to the calling thread in order while later
//! ones are still being built (the tuner times configuration `i` on the GPU while `i + 1 …`
//! compile); [`map`] collects them.
//!
//! [`behind`] is the other way round: the calling thread produces items (the CLI's `tilec
//! check` runs each case on the GPU) while other threads finish them (the CPU reference of
//! each case, seconds apiece for the large ones).
//!
//! How many threads: [`threads`] — `$TILEC_COMPILE_THREADS` when set to a positive number,
//! else the machine's parallelism. Each compile holds a few tens of MB (the MLIR and LLVM
//! modules of one kernel), so the bound is the cores, not memory.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// The environment variable that bounds the compile threads (a positive integer).
pub const THREADS_ENV: &str = "TILEC_COMPILE_THREADS";

/// How many compiles to run at once: `$TILEC_COMPILE_THREADS` when it is a positive integer,
/// else [`std::thread::available_parallelism`] (1 when that is unknown).
pub fn threads() -> usize {
    threads_from(std::env::var(THREADS_ENV).ok().as_deref())
}

fn threads_from(setting: Option<&str>) -> usize {
    setting
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// Runs `work(0) … work(n - 1)` on up to `threads` worker threads and hands each result to
/// `consume` on the calling thread, in index order, as soon as it and every one before it
/// are done. `consume` returning an error stops the workers after the items they are on and
/// is returned. With `threads` 0 everything runs on the calling thread, one item after the
/// other (work, consume, work, …).
pub fn ahead<O: Send, E>(
    n: usize,
    threads: usize,
    work: impl Fn(usize) -> O + Sync,
    mut consume: impl FnMut(usize, O) -> Result<(), E>,
) -> Result<(), E> {
    if threads == 0 || n == 0 {
        for i in 0..n {
            consume(i, work(i))?;
        }
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<(usize, O)>();
        for _ in 0..threads.min(n) {
            let tx = tx.clone();
            let (next, stop, work) = (&next, &stop, &work);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n || tx.send((i, work(i))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut done = BTreeMap::new();
        for i in 0..n {
            let out = loop {
                if let Some(o) = done.remove(&i) {
                    break o;
                }
                match rx.recv() {
                    Ok((j, o)) => {
                        done.insert(j, o);
                    }
                    // Every worker has ended without item i: one panicked (the scope
                    // re-raises it when it joins them).
                    Err(_) => return Ok(()),
                }
            };
            if let Err(e) = consume(i, out) {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Runs `produce` on the calling thread; each item it hands to its `emit` is finished by
/// `work` on one of up to `threads` other threads while `produce` goes on. At most `threads`
/// items wait for a worker (`emit` blocks past that: the items may be large). Returns what
/// `work` made of every item, in the order they were emitted, or `produce`'s error (the items
/// already emitted are still finished first). With `threads` 0, `work` runs inside `emit`.
pub fn behind<I: Send, O: Send, E>(
    threads: usize,
    produce: impl FnOnce(&mut dyn FnMut(I)) -> Result<(), E>,
    work: impl Fn(I) -> O + Sync,
) -> Result<Vec<O>, E> {
    if threads == 0 {
        let mut out = vec![];
        produce(&mut |item| out.push(work(item)))?;
        return Ok(out);
    }
    let (to_work, items) = mpsc::sync_channel::<(usize, I)>(threads);
    // Owned by the workers alone: when they have all ended (a panic in `work`), the queue's
    // end is gone and `emit` stops waiting for room in it.
    let items = std::sync::Arc::new(std::sync::Mutex::new(items));
    let (done_tx, done) = mpsc::channel::<(usize, O)>();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (items, done_tx, work) = (items.clone(), done_tx.clone(), &work);
            s.spawn(move || loop {
                // The lock is held only to take the next item, not while working on it.
                let next = items.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((i, item)) = next else { break };
                if done_tx.send((i, work(item))).is_err() {
                    break;
                }
            });
        }
        drop((done_tx, items));
        let mut n = 0usize;
        let produced = produce(&mut |item| {
            // A send fails only if every worker has ended, which a panic in `work` does (the
            // scope re-raises it when it joins them).
            let _ = to_work.send((n, item));
            n += 1;
        });
        drop(to_work);
        let mut out: BTreeMap<usize, O> = done.iter().collect();
        produced?;
        Ok((0..n).filter_map(|i| out.remove(&i)).collect())
    })
}

/// `f` of every item, on up to `threads` threads (see [`ahead`]), in the items' order.
pub fn map<I: Sync, O: Send>(items: &[I], threads: usize, f: impl Fn(&I) -> O + Sync) -> Vec<O> {
    let mut out = Vec::with_capacity(items.len());
    let collected: Result<(), std::convert::Infallible> = ahead(
        items.len(),
        threads,
        |i| f(&items[i]),
        |_, o| {
            out.push(o);
            Ok(())
        },
    );
    match collected {
        Ok(()) => out,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn results_come_back_in_order_whatever_order_they_finish_in() {
        for threads in [0, 1, 3, 16] {
            // Early items take longest, so they finish after later ones on several threads.
            let got = map(&[5u64, 4, 3, 2, 1, 0], threads, |&ms| {
                std::thread::sleep(std::time::Duration::from_millis(ms));
                ms * 10
            });
            assert_eq!(got, [50, 40, 30, 20, 10, 0], "{threads} threads");
        }
        assert!(map(&[] as &[u8], 4, |&x| x).is_empty());
    }

    #[test]
    fn work_runs_on_several_threads_at_once() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        map(&[(); 8], 4, |_| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(30));
            running.fetch_sub(1, Ordering::SeqCst);
        });
        assert!(most.load(Ordering::SeqCst) > 1, "never more than one at once");
        assert!(most.load(Ordering::SeqCst) <= 4);
    }

    #[test]
    fn an_error_of_the_consumer_stops_the_workers_and_is_returned() {
        let started = Mutex::new(vec![]);
        let r = ahead(
            1000,
            2,
            |i| {
                started.lock().unwrap().push(i);
                std::thread::sleep(std::time::Duration::from_millis(1));
                i
            },
            |i, o| {
                assert_eq!(i, o);
                if i == 3 {
                    Err(format!("stopped at {i}"))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err("stopped at 3".to_string()));
        // The workers stop soon after: far from all 1000 items were started.
        assert!(started.lock().unwrap().len() < 100, "{}", started.lock().unwrap().len());
        // On the calling thread: item after item, up to the error.
        let mut seen = vec![];
        let r = ahead(
            5,
            0,
            |i| i,
            |i, _| {
                if i == 2 {
                    return Err(());
                }
                seen.push(i);
                Ok(())
            },
        );
        assert_eq!((r, seen), (Err(()), vec![0, 1]));
    }

    #[test]
    fn work_behind_the_producer_comes_back_in_the_order_emitted() {
        for threads in [0, 1, 4] {
            let emitted_before_done = AtomicUsize::new(0);
            let out = behind(
                threads,
                |emit| -> Result<(), String> {
                    for ms in [6u64, 1, 4, 0, 2] {
                        emit(ms);
                        emitted_before_done.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(())
                },
                |ms| {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    ms + 100
                },
            );
            assert_eq!(out, Ok(vec![106, 101, 104, 100, 102]), "{threads} threads");
        }
        // The producer's error is returned once the emitted items are finished.
        let finished = AtomicUsize::new(0);
        let r = behind(
            2,
            |emit| {
                emit(1);
                emit(2);
                Err("the device went away")
            },
            |x: u32| {
                finished.fetch_add(1, Ordering::SeqCst);
                x
            },
        );
        assert_eq!(r, Err("the device went away"));
        assert_eq!(finished.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_thread_count_comes_from_the_environment_when_it_is_a_positive_number() {
        assert_eq!(threads_from(Some("3")), 3);
        let machine = threads_from(None);
        assert!(machine >= 1);
        for bad in ["0", "-2", "many", ""] {
            assert_eq!(threads_from(Some(bad)), machine, "{bad}");
        }
    }
}
