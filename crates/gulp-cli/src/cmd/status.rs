//! `gulp status OUT --shards N`: where a sharded ingest is.

use std::fs::{self, File, OpenOptions};
use std::io::Write;

use anyhow::{Context, Result, bail};
use gulp_format::{TEMP_PREFIX, data_file_name};
use gulp_ingest::{Plan, finished_tasks};
use gulp_io::GulpDirectory;
use serde::Serialize;

use crate::Outcome;
use crate::cli::StatusArgs;

#[derive(Debug, Serialize)]
struct Task {
    task: usize,
    /// "done", "running", "stopped" (killed or failed: re-run it) or
    /// "not started".
    state: &'static str,
    chunks: usize,
    committed: usize,
    missing: Vec<u64>,
}

#[derive(Debug, Serialize)]
struct Status {
    dir: String,
    shards: usize,
    /// Whether a sharded run is under way (its plan is in the directory).
    running: bool,
    chunks_total: Option<u64>,
    chunks_committed: usize,
    complete: bool,
    tasks: Vec<Task>,
    /// The tasks to submit again (stopped or not started).
    resubmit: Vec<usize>,
}

pub fn run(args: &StatusArgs) -> Result<Outcome> {
    let dir = &args.dir;
    let gulp = GulpDirectory::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    let plan = Plan::read(dir)?;
    let shards = match (&plan, args.shards) {
        (Some(p), Some(n)) if p.count != n.get() => bail!(
            "{} is being ingested as {} tasks, not {}",
            dir.display(),
            p.count,
            n
        ),
        (Some(p), _) => p.count,
        (None, Some(n)) => n.get(),
        (None, None) => bail!(
            "no sharded ingest is under way in {}: give --shards N",
            dir.display()
        ),
    };
    let committed: std::collections::HashSet<u64> = gulp.chunks().iter().map(|c| c.chunk).collect();
    let total = plan.as_ref().map(Plan::chunks);
    let done = finished_tasks(dir, shards);
    let mut tasks = Vec::new();
    for (task, &finished) in done.iter().enumerate() {
        let owned: Vec<u64> = match total {
            Some(t) => (0..t)
                .filter(|k| k % shards as u64 == task as u64)
                .collect(),
            None => committed
                .iter()
                .copied()
                .filter(|k| k % shards as u64 == task as u64)
                .collect(),
        };
        let missing: Vec<u64> = owned
            .iter()
            .copied()
            .filter(|k| !committed.contains(k))
            .collect();
        let lock = dir.join(format!("{TEMP_PREFIX}shard-{task}-of-{shards}.lock"));
        let running = OpenOptions::new()
            .write(true)
            .open(&lock)
            .ok()
            .is_some_and(|f: File| matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)));
        let started = lock.exists()
            || owned.iter().any(|k| {
                committed.contains(k)
                    || dir
                        .join(format!("{TEMP_PREFIX}{}", data_file_name(*k)))
                        .exists()
            });
        let state = if finished || (plan.is_none() && missing.is_empty()) {
            "done"
        } else if running {
            "running"
        } else if started {
            "stopped"
        } else {
            "not started"
        };
        tasks.push(Task {
            task,
            state,
            chunks: owned.len(),
            committed: owned.len() - missing.len(),
            missing,
        });
    }
    let resubmit: Vec<usize> = tasks
        .iter()
        .filter(|t| matches!(t.state, "stopped" | "not started"))
        .map(|t| t.task)
        .collect();
    let status = Status {
        dir: dir.display().to_string(),
        shards,
        running: plan.is_some(),
        chunks_total: total,
        chunks_committed: committed.len(),
        complete: plan.is_none(),
        tasks,
        resubmit,
    };
    let mut out = super::stdout();
    if args.json {
        super::write_json(&mut out, &status)?;
    } else {
        match status.chunks_total {
            Some(t) => writeln!(
                out,
                "{}: sharded ingest of {t} chunks over {shards} tasks; {} committed",
                status.dir, status.chunks_committed
            )?,
            None => writeln!(
                out,
                "{}: no sharded ingest under way; {} chunks",
                status.dir, status.chunks_committed
            )?,
        }
        for t in &status.tasks {
            let missing = if t.missing.is_empty() {
                String::new()
            } else {
                let list: Vec<String> = t.missing.iter().map(u64::to_string).collect();
                format!("; missing chunks {}", list.join(","))
            };
            writeln!(
                out,
                "task {}/{shards}: {} ({}/{} chunks){missing}",
                t.task, t.state, t.committed, t.chunks
            )?;
        }
        if !status.resubmit.is_empty() {
            let list: Vec<String> = status.resubmit.iter().map(usize::to_string).collect();
            writeln!(
                out,
                "to finish: run tasks {} again (Slurm: sbatch --array={} ...)",
                list.join(", "),
                list.join(",")
            )?;
        }
    }
    out.flush()?;
    Ok(if status.complete {
        Outcome::Success
    } else {
        Outcome::ProblemsFound
    })
}
