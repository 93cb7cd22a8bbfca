//! Writing many small files on a few threads, as copy-in and checkout do.
//!
//! Creating a small file is bound by filesystem latency, not CPU, so a few
//! threads write at once. Jobs are planned folder by folder and handed out in
//! runs: threads then mostly create files in different folders (in one folder
//! they queue on its lock; single jobs handed out in turn made copy-in twice
//! as slow). The first failure stops them all.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How many threads write `count` files: twice the cores (the work waits on
/// the disk more than on the CPU), at most 8, and one for small sets.
pub fn writers(count: usize) -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() * 2)
        .unwrap_or(4)
        .clamp(1, 8)
        .min(count.div_ceil(256).max(1))
}

/// Runs `work` on every job, on [`writers`] threads, each with its own state
/// from `init` (a repository handle, a decompressor); returns the results in
/// job order, or the first error (the other threads stop at their next job).
pub fn map_runs<J, R, S, E>(
    jobs: &[J],
    init: impl Fn() -> Result<S, E> + Sync,
    work: impl Fn(&mut S, &J) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E>
where
    J: Sync,
    R: Send,
    E: Send,
{
    let threads = writers(jobs.len());
    let run = (jobs.len() / (threads * 4)).max(32);
    let runs: Vec<&[J]> = jobs.chunks(run).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<E>> = Mutex::new(None);
    let fail = |e: E| {
        failed.store(true, Ordering::Relaxed);
        first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    };
    let mut done: Vec<(usize, Vec<R>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    let mut state = match init() {
                        Ok(state) => state,
                        Err(e) => {
                            fail(e);
                            return mine;
                        }
                    };
                    'runs: loop {
                        let at = next.fetch_add(1, Ordering::Relaxed);
                        let Some(part) = runs.get(at) else { break };
                        let mut results = Vec::with_capacity(part.len());
                        for job in *part {
                            if failed.load(Ordering::Relaxed) {
                                break 'runs;
                            }
                            match work(&mut state, job) {
                                Ok(r) => results.push(r),
                                Err(e) => {
                                    fail(e);
                                    break 'runs;
                                }
                            }
                        }
                        mine.push((at, results));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    done.sort_unstable_by_key(|(at, _)| *at);
    Ok(done.into_iter().flat_map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_back_in_job_order_and_the_first_error_wins() {
        let jobs: Vec<usize> = (0..5000).collect();
        let doubled =
            super::map_runs(&jobs, || Ok::<_, String>(()), |_, j| Ok(j * 2)).expect("no job fails");
        assert_eq!(doubled, jobs.iter().map(|j| j * 2).collect::<Vec<_>>());
        let failed = super::map_runs(
            &jobs,
            || Ok::<_, String>(()),
            |_, j| {
                if *j == 4321 {
                    Err(format!("job {j}"))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(failed, Err("job 4321".to_owned()));
    }
}
