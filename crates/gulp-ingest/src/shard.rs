//! Sharded ingest: task `I` of `N` writes the chunks `k` with `k % N == I`
//! into a shared output directory, with no coordinator.
//!
//! Chunk `k` holds the items of input positions `[k * per_chunk, (k + 1) *
//! per_chunk)` (after the shuffle, if any), whatever fails, so every task
//! computes the same split from the same list. In the directory, while
//! tasks run:
//!
//! - `.gulp-tmp.shards.json`: the plan (`count`, `items_per_chunk`,
//!   `items`, `shuffle_seed`), written by the first task; a task with
//!   another plan is refused.
//! - `.gulp-tmp.shard-I-of-N.lock`: task `I`'s lock (flock, held while it
//!   runs), so the same task started twice is refused. Every task also holds
//!   a shared lock on the directory, which a plain (unsharded) ingest takes
//!   exclusively.
//! - `.gulp-tmp.shard-I-of-N.done`: task `I` finished. The task that finds
//!   every task done removes the plan and the done files, leaving exactly
//!   what one unsharded run writes.
//!
//! All of them start with [`TEMP_PREFIX`](gulp_format::TEMP_PREFIX), so readers ignore them and
//! `gulp recover` (run when no task is running) clears them.
//!
//! In an object store there are no locks: the plan and the done files are
//! objects (a task with another plan is still refused, and `gulp status`
//! reads them), but a task started twice is not refused, and a running task
//! cannot be told from a stopped one.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use gulp_format::{JsonSerializer, Map, Value};

mod merge;
mod status;
pub use merge::{MergeReport, merge, merge_with_progress};
pub use status::{ShardStatus, TaskStatus, status};

use crate::error::{Error, Result};

/// Task `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This task, `0..count`.
    pub index: usize,
    /// The number of tasks.
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` (`0 <= I < N`).
    pub fn parse(text: &str) -> std::result::Result<Shard, String> {
        let bad = || format!("{text:?} is not I/N with 0 <= I < N (e.g. 3/8)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        Shard::new(index, count).ok_or_else(bad)
    }

    /// Task `index` of `count`, if `index < count`.
    pub fn new(index: usize, count: usize) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// The task from the scheduler's environment, so that a re-submitted
    /// task is the same task. The index is the scheduler's task index
    /// itself: Slurm's `SLURM_ARRAY_TASK_ID`, or Kubernetes'
    /// `JOB_COMPLETION_INDEX`. The count is, in this order: `planned` (the
    /// count of the run's plan in the output directory, when a run is under
    /// way), `count` (`--shard-count`, or `GULP_SHARD_COUNT`), or for Slurm
    /// a whole first array `0..N` (`SLURM_ARRAY_TASK_MIN` 0 and
    /// `SLURM_ARRAY_TASK_COUNT` = `SLURM_ARRAY_TASK_MAX` + 1). Anything
    /// else is ambiguous (`sbatch --array=1,3` of a run whose plan is gone,
    /// an array that does not start at 0) and refused with what to pass.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
        count: Option<usize>,
        planned: Option<usize>,
    ) -> std::result::Result<Shard, String> {
        let num = |name: &str| -> std::result::Result<Option<usize>, String> {
            get(name)
                .map(|v| {
                    v.trim()
                        .parse()
                        .map_err(|_| format!("{name}={v:?} is not a number"))
                })
                .transpose()
        };
        let count = match count {
            Some(n) => Some(n),
            None => num("GULP_SHARD_COUNT")?,
        };
        let given = match (planned, count) {
            (Some(p), Some(c)) if p != c => {
                return Err(format!(
                    "the run under way in the output directory has {p} tasks, not {c}"
                ));
            }
            (p, c) => p.or(c),
        };
        let (task, what, n) = if let Some(task) = num("SLURM_ARRAY_TASK_ID")? {
            let n = match given {
                Some(n) => n,
                None => {
                    let (min, max, total) = (
                        num("SLURM_ARRAY_TASK_MIN")?,
                        num("SLURM_ARRAY_TASK_MAX")?,
                        num("SLURM_ARRAY_TASK_COUNT")?,
                    );
                    match (min, max, total) {
                        (Some(0), Some(max), Some(total)) if total == max + 1 => total,
                        (Some(0), Some(max), None) => max + 1,
                        _ => {
                            let array = match (min, max) {
                                (Some(a), Some(b)) => format!(" (array {a}..={b}"),
                                _ => " (array".to_owned(),
                            };
                            let tasks = total.map_or(String::new(), |t| format!(", {t} tasks"));
                            return Err(format!(
                                "Slurm array task {task}{array}{tasks}) is not part of a whole \
                                 array 0..N and no run is under way in the output directory, so \
                                 the number of tasks is unknown: give --shard-count N (or \
                                 --shard {task}/N); a first run is submitted as --array=0-(N-1)"
                            ));
                        }
                    }
                }
            };
            (task, "Slurm array task", n)
        } else if let Some(index) = num("JOB_COMPLETION_INDEX")? {
            let n = given.ok_or(
                "JOB_COMPLETION_INDEX is set: give the number of tasks with --shard-count N or GULP_SHARD_COUNT",
            )?;
            (index, "JOB_COMPLETION_INDEX", n)
        } else {
            return Err("--shard auto: neither SLURM_ARRAY_TASK_ID (Slurm job array) nor JOB_COMPLETION_INDEX (Kubernetes Indexed Job) is set".into());
        };
        Shard::new(task, n).ok_or_else(|| {
            format!(
                "{what} {task} is not one of the {n} tasks 0..{n} of the run (task indices start at 0)"
            )
        })
    }

    /// Whether chunk `k` is this task's.
    pub fn owns(&self, chunk: u64) -> bool {
        chunk % self.count as u64 == self.index as u64
    }

    fn name(&self, what: &str) -> String {
        format!("{SHARD_PREFIX}{}-of-{}.{what}", self.index, self.count)
    }

    /// The name of this task's lock file (held while it runs).
    pub fn lock_file_name(&self) -> String {
        self.name("lock")
    }
}

/// The start of every shard file's name (lock, done, a plan being written).
const SHARD_PREFIX: &str = ".gulp-tmp.shard-";

/// Whether `name` is the name of a sharded run's bookkeeping that a merge
/// removes once the run's chunks are in place: its plan or a task's
/// done file.
pub fn is_bookkeeping(name: &str) -> bool {
    name == PLAN_FILE || (name.starts_with(SHARD_PREFIX) && name.ends_with(".done"))
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The file holding a sharded run's plan.
pub const PLAN_FILE: &str = ".gulp-tmp.shards.json";

/// What every task of a sharded run must agree on.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Tasks.
    pub count: usize,
    /// Items per chunk.
    pub items_per_chunk: usize,
    /// Items in the input list.
    pub items: usize,
    /// The shuffle's seed.
    pub shuffle_seed: Option<u64>,
}

impl Plan {
    /// Chunks of the whole list.
    pub fn chunks(&self) -> u64 {
        self.items.div_ceil(self.items_per_chunk.max(1)) as u64
    }

    fn to_json(&self) -> String {
        let mut map = Map::default();
        let int = |v: usize| Value::from(v as u64);
        map.insert("count".into(), int(self.count));
        map.insert("items_per_chunk".into(), int(self.items_per_chunk));
        map.insert("items".into(), int(self.items));
        map.insert(
            "shuffle_seed".into(),
            self.shuffle_seed.map_or(Value::Null, Value::from),
        );
        JsonSerializer::value_to_string(&Value::Object(map))
    }

    fn parse(bytes: &[u8], path: &Path) -> Result<Plan> {
        let bad = |reason: &str| Error::input(path, reason.to_owned());
        let value = JsonSerializer::parse_value(bytes).map_err(|e| bad(&e.to_string()))?;
        let get = |key: &str| -> Result<Option<u64>> {
            match value.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_i64()
                    .and_then(|i| u64::try_from(i).ok())
                    .map(Some)
                    .ok_or_else(|| bad(&format!("{key} is not a count"))),
            }
        };
        let size = |key: &str| -> Result<usize> {
            get(key)?
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| bad(&format!("no {key}")))
        };
        Ok(Plan {
            count: size("count")?,
            items_per_chunk: size("items_per_chunk")?,
            items: size("items")?,
            shuffle_seed: get("shuffle_seed")?,
        })
    }

    /// The plan of the run in `dir` (local or `s3://`), if one is under
    /// way.
    pub fn read(dir: &Path) -> Result<Option<Plan>> {
        let path = dir.join(PLAN_FILE);
        match gulp_store::read_optional(&path)? {
            Some(bytes) => Plan::parse(&bytes, &path).map(Some),
            None => Ok(None),
        }
    }

    /// Records this plan in `dir`, or checks it against the one there.
    fn join(&self, dir: &Path, shard: Shard) -> Result<()> {
        let path = dir.join(PLAN_FILE);
        if gulp_store::is_remote(dir) {
            // No atomic create in a bucket: the first plan seen is kept, and
            // a task that wrote it reads it back like the others.
            if Plan::read(dir)?.is_none() {
                put(&path, self.to_json().into_bytes())?;
            }
            return self.check_against(dir, shard);
        }
        // Written under a name of this task, then linked into place: the
        // link fails if another task was first, and nobody ever reads a
        // half-written plan.
        let tmp = dir.join(shard.name("plan"));
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(self.to_json().as_bytes())?;
            f.sync_all()
        };
        write().map_err(|e| Error::io("writing", &tmp, e))?;
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io("creating", path, e)),
        }
        self.check_against(dir, shard)
    }

    /// Checks this plan against the one of the run in `dir`.
    fn check_against(&self, dir: &Path, shard: Shard) -> Result<()> {
        let path = dir.join(PLAN_FILE);
        let theirs = Plan::read(dir)?.ok_or_else(|| {
            Error::Options(format!("{} vanished while joining the run", path.display()))
        })?;
        if theirs != *self {
            return Err(Error::Options(format!(
                "{} is being ingested as {} tasks of {} items per chunk over {} items (shuffle seed {:?}); \
                 this task ({shard}) has {} tasks of {} items per chunk over {} items (shuffle seed {:?}). \
                 Use the same --shard count, list and options, or run `gulp recover` when no task is running to start over",
                dir.display(),
                theirs.count,
                theirs.items_per_chunk,
                theirs.items,
                theirs.shuffle_seed,
                self.count,
                self.items_per_chunk,
                self.items,
                self.shuffle_seed,
            )));
        }
        Ok(())
    }
}

/// A running task's hold on the directory: the shared directory lock and
/// its own task lock (none in an object store).
#[derive(Debug)]
pub(crate) struct TaskLock {
    locks: Option<Locks>,
    dir_path: PathBuf,
    shard: Shard,
    plan: Plan,
    joined: bool,
}

/// A local task's locks.
#[derive(Debug)]
struct Locks {
    _dir: File,
    task: File,
    task_path: PathBuf,
}

impl TaskLock {
    /// Takes task `shard`'s locks in `dir` (the plan is joined later, by
    /// [`join`](Self::join), once the task knows it has work to do).
    pub(crate) fn take(dir: &Path, shard: Shard, plan: Plan) -> Result<TaskLock> {
        let locks = if gulp_store::is_remote(dir) {
            None
        } else {
            Some(Locks::take(dir, shard)?)
        };
        Ok(TaskLock {
            locks,
            dir_path: dir.to_owned(),
            shard,
            plan,
            joined: false,
        })
    }
}

impl Locks {
    fn take(dir: &Path, shard: Shard) -> Result<Locks> {
        let dir_file = File::open(dir).map_err(|e| Error::io("opening", dir, e))?;
        match dir_file.try_lock_shared() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(Error::Locked {
                    path: dir.to_owned(),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io("locking", dir, e)),
        }
        let task_path = dir.join(shard.name("lock"));
        let task = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&task_path)
            .map_err(|e| Error::io("creating", &task_path, e))?;
        match task.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(Error::Options(format!(
                    "task {shard} is already running in {} ({} is locked)",
                    dir.display(),
                    task_path.display()
                )));
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io("locking", &task_path, e)),
        }
        Ok(Locks {
            _dir: dir_file,
            task,
            task_path,
        })
    }

    fn release(self) {
        let _ = fs::remove_file(&self.task_path);
        drop(self.task);
    }
}

impl TaskLock {
    /// Records the plan in the directory, or checks it against the plan of
    /// the run under way. A task with nothing to do (a re-run after the run
    /// finished) joins only to check a run that is under way, so it leaves
    /// no plan behind.
    pub(crate) fn join(&mut self, has_work: bool) -> Result<()> {
        if has_work || Plan::read(&self.dir_path)?.is_some() {
            self.plan.join(&self.dir_path, self.shard)?;
            self.joined = true;
        }
        Ok(())
    }

    /// Marks this task done; the task that finds every task done removes
    /// the run's files.
    pub(crate) fn finish(self) -> Result<bool> {
        let dir = &self.dir_path;
        let remote = self.locks.is_none();
        if !self.joined {
            if let Some(locks) = self.locks {
                locks.release();
            }
            return Ok(false);
        }
        let done = dir.join(self.shard.name("done"));
        if remote {
            put(&done, Vec::new())?;
        } else {
            File::create(&done).map_err(|e| Error::io("creating", &done, e))?;
        }
        let count = self.plan.count;
        let all: Vec<PathBuf> = (0..count)
            .map(|index| dir.join(Shard { index, count }.name("done")))
            .collect();
        if let Some(locks) = self.locks {
            locks.release();
        }
        if !finished_tasks(dir, count)?.iter().all(|d| *d) {
            return Ok(false);
        }
        // Several tasks may get here at once: removing is idempotent.
        gone(&dir.join(PLAN_FILE))?;
        for p in &all {
            gone(p)?;
        }
        Ok(true)
    }
}

/// Removes a file or object that may be gone already.
fn gone(path: &Path) -> Result<()> {
    Ok(gulp_store::remove_file(path)?)
}

/// Writes a whole object.
fn put(url: &Path, bytes: Vec<u8>) -> Result<()> {
    Ok(gulp_store::write_object(url, bytes)?)
}

/// Which tasks of a sharded run in `dir` (local or in a store) have
/// finished (their done files).
pub fn finished_tasks(dir: &Path, count: usize) -> Result<Vec<bool>> {
    let name = |index| Shard { index, count }.name("done");
    if gulp_store::is_remote(dir) {
        let listed: std::collections::HashSet<String> = gulp_store::list_dir(dir)?
            .into_iter()
            .map(|l| l.name)
            .collect();
        return Ok((0..count).map(|i| listed.contains(&name(i))).collect());
    }
    Ok((0..count).map(|i| dir.join(name(i)).exists()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shard_file_is_a_temporary_name_readers_ignore() {
        let shard = Shard::new(2, 5).expect("shard");
        for name in [PLAN_FILE, &shard.lock_file_name(), &shard.name("done")] {
            assert!(name.starts_with(gulp_format::TEMP_PREFIX), "{name}");
        }
        assert!(is_bookkeeping(PLAN_FILE) && is_bookkeeping(&shard.name("done")));
        assert!(!is_bookkeeping(&shard.lock_file_name()));
    }

    #[test]
    fn parses_and_reads_the_environment() {
        assert_eq!(Shard::parse("3/8"), Ok(Shard { index: 3, count: 8 }));
        assert!(Shard::parse("8/8").is_err());
        assert!(Shard::parse("x").is_err());
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        // A first run, --array=0-3: the whole array gives the count.
        let first = env(&[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(
            Shard::from_env(first, None, None),
            Ok(Shard { index: 2, count: 4 })
        );
        // Re-submitted as --array=1,3: the task is the task id, the count
        // the plan's.
        let again = env(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ]);
        assert_eq!(
            Shard::from_env(again, None, Some(4)),
            Ok(Shard { index: 3, count: 4 })
        );
        assert_eq!(
            Shard::from_env(again, Some(4), None),
            Ok(Shard { index: 3, count: 4 })
        );
        let err = Shard::from_env(again, None, None).expect_err("ambiguous");
        assert!(
            err.contains("--shard-count N") && err.contains("array 1..=3"),
            "{err}"
        );
        let err = Shard::from_env(again, Some(5), Some(4)).expect_err("two counts");
        assert!(err.contains("has 4 tasks, not 5"), "{err}");
        // --array=17,42 of a 64-task run.
        let late = env(&[
            ("SLURM_ARRAY_TASK_ID", "42"),
            ("SLURM_ARRAY_TASK_MIN", "17"),
            ("SLURM_ARRAY_TASK_MAX", "42"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ]);
        assert_eq!(
            Shard::from_env(late, None, Some(64)),
            Ok(Shard {
                index: 42,
                count: 64
            })
        );
        // An array from 1 is refused (task 0 would never run).
        let one_based = env(&[
            ("SLURM_ARRAY_TASK_ID", "4"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_MAX", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert!(Shard::from_env(one_based, None, None).is_err());
        let err = Shard::from_env(one_based, Some(4), None).expect_err("4 of 4");
        assert!(err.contains("start at 0"), "{err}");
        let k8s = env(&[("JOB_COMPLETION_INDEX", "1"), ("GULP_SHARD_COUNT", "3")]);
        assert_eq!(
            Shard::from_env(k8s, None, None),
            Ok(Shard { index: 1, count: 3 })
        );
        let k8s_no_count = env(&[("JOB_COMPLETION_INDEX", "1")]);
        assert!(
            Shard::from_env(k8s_no_count, None, None)
                .unwrap_err()
                .contains("GULP_SHARD_COUNT")
        );
        assert_eq!(
            Shard::from_env(k8s_no_count, Some(2), None),
            Ok(Shard { index: 1, count: 2 })
        );
        assert_eq!(
            Shard::from_env(k8s_no_count, None, Some(5)),
            Ok(Shard { index: 1, count: 5 })
        );
        assert!(
            Shard::from_env(env(&[]), None, None)
                .unwrap_err()
                .contains("neither")
        );
    }
}
