//! `gulp recover`: finish or clear what an interrupted write left behind.

use std::fs::{File, TryLockError};
use std::io::Write;

use anyhow::{Context, Result, bail};

use crate::Outcome;
use crate::cli::RecoverArgs;

pub(super) fn run(args: &RecoverArgs) -> Result<Outcome> {
    let dir = &args.dir;
    // The lock an ingest holds on the directory: recovering under a running
    // writer would remove its temporary files.
    let handle = File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
    match handle.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => bail!(
            "{}: an ingest is writing into this directory; run `gulp recover` after it ends",
            dir.display()
        ),
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", dir.display()));
        }
    }
    let done = gulp_io::recover(dir)?;
    let mut out = super::stdout();
    for r in &done {
        writeln!(out, "{r}")?;
    }
    if done.is_empty() {
        writeln!(out, "{}: nothing to recover", dir.display())?;
    }
    out.flush()?;
    drop(handle);
    Ok(Outcome::Success)
}
