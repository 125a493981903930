//! `gulp merge OUT DIR...`: move the chunks of shard directories into one
//! ([`gulp_ingest::shard::merge`]), and say what was done.

use std::io::Write;

use anyhow::Result;
use gulp_io::LABEL_FILE;

use crate::Outcome;
use crate::cli::MergeArgs;

pub(super) fn run(args: &MergeArgs) -> Result<Outcome> {
    let bar = super::progress("chunks moved");
    let report =
        gulp_ingest::shard::merge_with_progress(&args.out, &args.dirs, &mut |n| bar.inc(n as u64))?;
    bar.finish_and_clear();
    let mut stdout = super::stdout();
    writeln!(
        stdout,
        "moved {} chunks from {} directories into {}{}",
        report.moved,
        report.sources,
        args.out.display(),
        if report.labels == 0 {
            String::new()
        } else {
            format!("; {} labels in {LABEL_FILE}", report.labels)
        }
    )?;
    stdout.flush()?;
    Ok(Outcome::Success)
}
