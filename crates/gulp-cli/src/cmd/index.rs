//! `gulp index`: write (or refresh) a directory's index file.

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use gulp_io::{GulpDirectory, IndexPolicy, IndexState};

use crate::Outcome;
use crate::cli::IndexArgs;

pub(super) fn run(args: &IndexArgs) -> Result<Outcome> {
    let start = Instant::now();
    let path = args.dir.join(gulp_io::gulp_format::INDEX_FILE);
    let open = |policy| {
        GulpDirectory::options()
            .index(policy)
            .open(&args.dir)
            .with_context(|| format!("cannot open gulp directory {}", args.dir.display()))
    };
    let mut out = super::stdout();
    if args.remove {
        match std::fs::remove_file(&path) {
            Ok(()) => writeln!(out, "{}: removed", path.display())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                writeln!(out, "{}: there is none", path.display())?;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
        }
        out.flush()?;
        return Ok(Outcome::Success);
    }
    let before = open(IndexPolicy::Off)?;
    let was = match before.index_state_now() {
        None => anyhow::bail!(
            "{}: a directory in an object store has no index file (its node cache holds what \
             is read)",
            args.dir.display()
        ),
        Some(IndexState::Fresh(_)) => "was up to date",
        Some(IndexState::Missing) => "written",
        Some(IndexState::Stale(_)) => "rewritten (it was stale)",
        Some(IndexState::Damaged(_)) => "rewritten (it was damaged)",
    };
    drop(before);
    let mut gd = open(IndexPolicy::Always)?;
    if gd.index_file().is_none() && !gd.write_index()? {
        anyhow::bail!(
            "{}: cannot have an index file (a read-only directory, a frame record of 1 GiB or \
             more, or a chunk written while it was built); it is read from its meta files",
            args.dir.display()
        );
    }
    let index = gd.index_file().context("index file")?;
    writeln!(
        out,
        "{}: {was}: {} chunks, {} items, {} frames, {} bytes, in {:.1} s",
        path.display(),
        index.n_chunks(),
        index.len(),
        index.n_frames(),
        index.bytes().len(),
        start.elapsed().as_secs_f64()
    )?;
    out.flush()?;
    Ok(Outcome::Success)
}
