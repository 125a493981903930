//! The subcommands, one module each, and what they share.

mod bench;
mod check;
mod convert;
mod copy;
mod dump_meta;
mod extract;
mod index;
mod info;
mod ingest;
mod lint;
mod merge;
mod preview;
mod recover;
#[cfg(feature = "serve")]
mod serve;
mod status;

use std::io::{BufWriter, StdoutLock, Write};
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use gulp_io::{DirectoryOptions, GulpDirectory};
use gulp_store::CacheOptions;

use crate::Outcome;
use crate::cli::{CacheArgs, Command};

/// How every command opens directories: the node cache of the command
/// line, else of the environment.
static OPEN: OnceLock<DirectoryOptions> = OnceLock::new();

/// Sets the node cache of remote directories from the command line
/// (`--cache-dir`, `--cache-limit`, `--cache-fetch`, `--no-cache`) and the
/// environment.
pub(crate) fn set_cache(args: &CacheArgs) -> Result<()> {
    let needs_dir = !args.no_cache
        && args.cache_dir.is_none()
        && (args.cache_limit.is_some() || args.cache_fetch.is_some());
    let choice = CacheOptions::resolve(
        args.no_cache,
        args.cache_dir.clone(),
        args.cache_limit,
        args.cache_fetch,
    )
    .map_err(|e| match needs_dir {
        true => {
            anyhow::anyhow!("--cache-limit and --cache-fetch need --cache-dir (or GULP_CACHE_DIR)")
        }
        false => anyhow::Error::from(e),
    })?;
    let options = GulpDirectory::options().cache_choice(choice);
    let _ = OPEN.set(options);
    Ok(())
}

/// Says on stderr that `old` is an old spelling of `new`, which it still
/// means.
fn deprecated(old: &str, new: &str) {
    eprintln!("gulp: warning: {old} is deprecated: use {new}");
}

/// A frame selection given as `--select` or by its old spelling
/// `--frames`; every frame when neither.
fn selection(select: &Option<String>, frames: &Option<String>) -> String {
    if frames.is_some() {
        deprecated("--frames SEL", "--select SEL");
    }
    select
        .clone()
        .or_else(|| frames.clone())
        .unwrap_or_else(|| ":".into())
}

/// A size in binary units, as `gulp info` and `gulp copy` print it.
pub(crate) fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    #[allow(clippy::cast_precision_loss)] // for display only
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// How directories are opened ([`set_cache`]).
pub(crate) fn directory_options() -> DirectoryOptions {
    OPEN.get().cloned().unwrap_or_default()
}

/// Runs one subcommand.
pub(crate) fn run(command: Command) -> Result<Outcome> {
    match command {
        Command::Ingest(kind) => ingest::run(kind),
        Command::Check(args) => check::run(&args),
        Command::Lint(args) => lint::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::Copy(args) => copy::run(&args),
        Command::Preview(args) => preview::run(&args),
        Command::DumpMeta(args) => dump_meta::run(&args),
        Command::Info(args) => info::run(&args),
        Command::Index(args) => index::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Extract(args) => extract::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Status(args) => status::run(&args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(&args),
        #[cfg(not(feature = "serve"))]
        Command::Serve { .. } => anyhow::bail!(
            "this gulp was built without `gulp serve` (cargo feature `serve`; scripts/sample.sh \
             builds without it): scripts/python-package.sh builds the package with it"
        ),
    }
}

/// Buffered standard output. Write errors are returned, not panicked on, so
/// that a closed pipe ends the program quietly (see `main`).
fn stdout() -> BufWriter<StdoutLock<'static>> {
    BufWriter::new(std::io::stdout().lock())
}

/// Writes `value` as pretty JSON and a newline.
fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

/// The thread count: as asked, or one per core.
fn threads(asked: Option<NonZeroUsize>) -> usize {
    asked
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
}

/// Opens a gulp directory, saying which one on failure.
fn open_dir(dir: &Path) -> Result<GulpDirectory> {
    directory_options()
        .open(dir)
        .with_context(|| format!("cannot open gulp directory {}", dir.display()))
}

/// The frame indices `selection` picks in item `id` of `reader`; a
/// selection out of range is a selection error that names the id.
fn frame_indices(
    reader: &gulp_io::ChunkReader,
    id: &str,
    selection: &gulp_io::Selection,
) -> Result<Vec<usize>> {
    let n = reader.item(id)?.frame_info.len();
    Ok(selection.resolve(n).map_err(|reason| {
        gulp_io::Error::from(gulp_io::ErrorKind::Selection {
            id: id.to_owned(),
            reason,
        })
    })?)
}

/// A progress counter on stderr, drawn only when stderr is a terminal.
fn progress(what: &'static str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new_spinner();
    let style = indicatif::ProgressStyle::with_template("{spinner} {human_pos} {msg} {per_sec}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
    bar.set_style(style);
    bar.set_message(what);
    bar
}
