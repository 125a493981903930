//! `gulp status OUT --shards N`: where a sharded ingest is.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use gulp_format::{TEMP_PREFIX, data_file_name};
use gulp_ingest::{Plan, Shard, finished_tasks};
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

fn lock_path(dir: &Path, task: usize, shards: usize) -> PathBuf {
    match Shard::new(task, shards) {
        Some(shard) => dir.join(shard.lock_file_name()),
        // No such task: a name no file has.
        None => dir.join(format!("{TEMP_PREFIX}no-task")),
    }
}

/// What the directory says of a sharded run, read once.
struct Facts {
    shards: usize,
    /// The chunks of the run, while its plan is in the directory.
    total: Option<u64>,
    committed: HashSet<u64>,
    /// Per task, whether it recorded its end.
    finished: Vec<bool>,
}

impl Facts {
    /// The chunks task `task` writes: `k % shards == task`, of the plan's
    /// chunks (or of those committed when the plan is gone).
    fn owned(&self, task: usize) -> Vec<u64> {
        let mine = |k: &u64| k % self.shards as u64 == task as u64;
        match self.total {
            Some(t) => (0..t).filter(mine).collect(),
            None => {
                let mut owned: Vec<u64> = self.committed.iter().copied().filter(mine).collect();
                owned.sort_unstable();
                owned
            }
        }
    }

    /// Each task's state, and the tasks to submit again; `running` and
    /// `started` ask the directory about one task.
    fn status(
        &self,
        dir: String,
        running: impl Fn(usize) -> bool,
        started: impl Fn(usize, &[u64]) -> bool,
    ) -> Status {
        let mut tasks = Vec::new();
        for (task, &finished) in self.finished.iter().enumerate() {
            let owned = self.owned(task);
            let missing: Vec<u64> = owned
                .iter()
                .copied()
                .filter(|k| !self.committed.contains(k))
                .collect();
            let state = if finished || (self.total.is_none() && missing.is_empty()) {
                "done"
            } else if running(task) {
                "running"
            } else if started(task, &owned) {
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
        let resubmit = tasks
            .iter()
            .filter(|t| matches!(t.state, "stopped" | "not started"))
            .map(|t| t.task)
            .collect();
        Status {
            dir,
            shards: self.shards,
            running: self.total.is_some(),
            chunks_total: self.total,
            chunks_committed: self.committed.len(),
            complete: self.total.is_none(),
            tasks,
            resubmit,
        }
    }
}

pub fn run(args: &StatusArgs) -> Result<Outcome> {
    let dir = &args.dir;
    let remote = gulp_io::is_remote(dir);
    let gulp = GulpDirectory::options()
        .cache(None)
        .open(dir)
        .with_context(|| format!("opening {}", dir.display()))?;
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
    let facts = Facts {
        shards,
        total: plan.as_ref().map(Plan::chunks),
        committed: gulp.chunks().iter().map(|c| c.chunk).collect(),
        finished: finished_tasks(dir, shards)?,
    };
    // What only the directory can tell: a task's lock held (running), or
    // its lock or a chunk of it begun (started).
    // In a bucket there are no locks: a task that has begun and is not done
    // may be running or stopped (the output says so).
    let running = |task: usize| {
        !remote
            && OpenOptions::new()
                .write(true)
                .open(lock_path(dir, task, shards))
                .ok()
                .is_some_and(|f: File| matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)))
    };
    let started = |task: usize, owned: &[u64]| {
        (!remote && lock_path(dir, task, shards).exists())
            || owned.iter().any(|k| {
                facts.committed.contains(k)
                    || (!remote
                        && dir
                            .join(format!("{TEMP_PREFIX}{}", data_file_name(*k)))
                            .exists())
            })
    };
    let status = facts.status(dir.display().to_string(), running, started);
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
            if remote {
                writeln!(
                    out,
                    "(in a bucket a running task cannot be told from a stopped one: \"stopped\" tasks may still be running)"
                )?;
            }
            writeln!(out, "to finish, run tasks {} again:", list.join(", "))?;
            writeln!(
                out,
                "  Slurm: sbatch --array={} <the same script and arguments>  (--shard auto takes the task from SLURM_ARRAY_TASK_ID and the count, {shards}, from the run's plan in {})",
                list.join(","),
                status.dir
            )?;
            writeln!(
                out,
                "  Kubernetes: create the Indexed Job again with completions: {shards} (the tasks that are done find their chunks committed and skip them)"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(total: Option<u64>, committed: &[u64], finished: &[bool]) -> Facts {
        Facts {
            shards: finished.len(),
            total,
            committed: committed.iter().copied().collect(),
            finished: finished.to_vec(),
        }
    }

    #[test]
    fn each_task_gets_its_state_from_the_facts() {
        // 7 chunks over 3 tasks: task 0 owns 0, 3, 6; task 1 owns 1, 4;
        // task 2 owns 2, 5.
        let f = facts(Some(7), &[0, 3, 6, 1], &[true, false, false]);
        let status = f.status("d".into(), |task| task == 2, |_, owned| owned.contains(&1));
        let states: Vec<_> = status.tasks.iter().map(|t| t.state).collect();
        assert_eq!(states, ["done", "stopped", "running"]);
        assert_eq!(status.tasks[1].missing, [4]);
        assert_eq!((status.tasks[2].chunks, status.tasks[2].committed), (2, 0));
        assert_eq!(status.resubmit, [1]);
        assert!(status.running && !status.complete);
        // Nothing begun: not started, to submit again too.
        let idle = f.status("d".into(), |_| false, |_, _| false);
        assert_eq!(idle.tasks[2].state, "not started");
        assert_eq!(idle.resubmit, [1, 2]);
    }

    #[test]
    fn without_a_plan_the_committed_chunks_are_the_run() {
        let f = facts(None, &[5, 0, 2], &[false, false]);
        let status = f.status("d".into(), |_| false, |_, _| false);
        assert_eq!(status.tasks[0].chunks, 2); // 0 and 2, sorted
        assert!(status.tasks.iter().all(|t| t.state == "done"));
        assert!(status.complete && status.resubmit.is_empty());
    }
}
