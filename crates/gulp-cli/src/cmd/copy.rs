//! `gulp copy`: a directory to or from an object store, resumably.

use std::io::Write;

use anyhow::Result;
use gulp_io::{CopyAction, CopyStep, copy_dir};

use super::human_bytes;
use crate::Outcome;
use crate::cli::CopyArgs;

pub(super) fn run(args: &CopyArgs) -> Result<Outcome> {
    let mut progress = |step: &CopyStep<'_>| {
        if !args.quiet {
            let what = match step.action {
                CopyAction::Copied => "copied",
                CopyAction::Skipped => "already there",
            };
            eprintln!(
                "gulp copy: [{}/{}] {} ({}) {what}",
                step.done,
                step.total,
                step.name,
                human_bytes(step.bytes)
            );
        }
    };
    let report = copy_dir(&args.src, &args.dst, &mut progress)?;
    let mut out = super::stdout();
    writeln!(
        out,
        "{} -> {}: {} file(s) copied ({}), {} already there",
        args.src.display(),
        args.dst.display(),
        report.copied,
        human_bytes(report.copied_bytes),
        report.skipped
    )?;
    if report.unverified > 0 {
        writeln!(
            out,
            "{} file(s) checked by size only: the store's entity tags are not MD5 digests",
            report.unverified
        )?;
    }
    if !report.left_out.is_empty() {
        writeln!(
            out,
            "left out (temporary and lock files): {}",
            report.left_out.join(", ")
        )?;
    }
    out.flush()?;
    Ok(Outcome::Success)
}
