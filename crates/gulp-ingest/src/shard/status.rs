//! Where a sharded ingest is ([`status`]): each task's state and chunks,
//! and the tasks to submit again; what `gulp status` prints and
//! `gulp.status` returns.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::path::Path;

use gulp_format::{TEMP_PREFIX, data_file_name};
use gulp_io::GulpDirectory;
use serde::Serialize;

use super::{Plan, Shard, finished_tasks};
use crate::error::{Error, Result};

/// One task of a sharded run.
#[derive(Debug, Clone, Serialize)]
pub struct TaskStatus {
    /// The task's index.
    pub task: usize,
    /// "done", "running", "stopped" (killed or failed: re-run it) or
    /// "not started".
    pub state: &'static str,
    /// The chunks it writes.
    pub chunks: usize,
    /// Of those, the ones committed.
    pub committed: usize,
    /// The ones not committed yet.
    pub missing: Vec<u64>,
}

/// Where a sharded ingest into a directory is.
#[derive(Debug, Clone, Serialize)]
pub struct ShardStatus {
    /// The directory.
    pub dir: String,
    /// Whether it is in a bucket (where a running task cannot be told from
    /// a stopped one: "stopped" tasks may still be running).
    #[serde(skip)]
    pub in_bucket: bool,
    /// The number of tasks.
    pub shards: usize,
    /// Whether a sharded run is under way (its plan is in the directory).
    pub running: bool,
    /// The run's chunks, while it is under way.
    pub chunks_total: Option<u64>,
    /// The chunks committed.
    pub chunks_committed: usize,
    /// Whether the run is over (no plan left): every chunk committed.
    pub complete: bool,
    /// Each task.
    pub tasks: Vec<TaskStatus>,
    /// The tasks to submit again (stopped or not started).
    pub resubmit: Vec<usize>,
}

/// Where a sharded ingest into `dir` is: the number of tasks from the run's
/// plan, else `shards` (an error when neither says, or they differ). Reads
/// the committed chunks, the tasks' done files and (in a local directory)
/// their locks.
pub fn status(dir: &Path, shards: Option<usize>) -> Result<ShardStatus> {
    let remote = gulp_store::is_remote(dir);
    let gulp = GulpDirectory::options()
        .cache(None)
        .index(GulpDirectory::writer_index_policy()?)
        .open(dir)?;
    let plan = Plan::read(dir)?;
    let shards = match (&plan, shards) {
        (Some(p), Some(n)) if p.count != n => {
            return Err(Error::Options(format!(
                "{} is being ingested as {} tasks, not {n}",
                dir.display(),
                p.count
            )));
        }
        (Some(p), _) => p.count,
        (None, Some(n)) => n,
        (None, None) => {
            return Err(Error::Options(format!(
                "no sharded ingest is under way in {}: give --shards N",
                dir.display()
            )));
        }
    };
    let facts = Facts {
        shards,
        total: plan.as_ref().map(Plan::chunks),
        committed: gulp.chunks().iter().map(|c| c.chunk).collect(),
        finished: finished_tasks(dir, shards)?,
    };
    let lock = |task: usize| Shard::new(task, shards).map(|s| dir.join(s.lock_file_name()));
    // What only the directory can tell: a task's lock held (running), or
    // its lock or a chunk of it begun (started).
    // In a bucket there are no locks: a task that has begun and is not done
    // may be running or stopped (the output says so).
    let running = |task: usize| {
        !remote
            && lock(task)
                .and_then(|path| OpenOptions::new().write(true).open(path).ok())
                .is_some_and(|f: File| matches!(f.try_lock(), Err(fs::TryLockError::WouldBlock)))
    };
    let started = |task: usize, owned: &[u64]| {
        (!remote && lock(task).is_some_and(|path| path.exists()))
            || owned.iter().any(|k| {
                facts.committed.contains(k)
                    || (!remote
                        && dir
                            .join(format!("{TEMP_PREFIX}{}", data_file_name(*k)))
                            .exists())
            })
    };
    let mut status = facts.status(dir.display().to_string(), running, started);
    status.in_bucket = remote;
    Ok(status)
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
    ) -> ShardStatus {
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
            tasks.push(TaskStatus {
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
        ShardStatus {
            dir,
            in_bucket: false,
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
