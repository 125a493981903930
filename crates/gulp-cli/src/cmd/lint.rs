//! `gulp lint`: the flags to a [`gulp_lint::lint`] call, then the table,
//! the JSON report and the id lists.

use std::io::Write;

use anyhow::{Context, Result};
use gulp_lint::{Check, Options, Report, Thresholds};

use crate::Outcome;
use crate::cli::{LintArgs, ThresholdArgs};

pub(super) fn run(args: &LintArgs) -> Result<Outcome> {
    let options = Options {
        checks: args
            .checks
            .as_ref()
            .map_or_else(|| Check::ALL.to_vec(), |c| c.0.clone()),
        thresholds: thresholds(&args.thresholds),
        threads: super::threads(args.threads),
        label_key: args.label_key.clone(),
        open: super::directory_options(),
    };
    let bar = (!args.quiet).then(|| super::progress("frames linted"));
    let report = gulp_lint::lint(&args.dirs, &options, &|n| {
        if let Some(bar) = &bar {
            bar.inc(n);
        }
    })
    .context("lint stopped")?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let Some(path) = &args.json {
        report.write_json(path)?;
    }
    if !args.ids_out.is_empty() {
        let drop = args.drop.as_ref().map_or(&[][..], |d| &d.0[..]);
        report.write_ids(&args.ids_out, drop)?;
    }
    if !args.quiet {
        print(&report)?;
    }
    Ok(if report.findings.is_empty() {
        Outcome::Success
    } else {
        Outcome::ProblemsFound
    })
}

/// The thresholds of the command line.
pub(super) fn thresholds(t: &ThresholdArgs) -> Thresholds {
    Thresholds {
        near_distance: t.near_distance,
        dark: t.dark,
        light: t.light,
        blank: t.blank,
        low_information: t.low_information,
        blurry: t.blurry,
        frozen_diff: t.frozen_diff,
        frozen_frames: t.frozen_frames,
        min_frames: t.min_frames,
        odd_size: t.odd_size,
        odd_aspect: t.odd_aspect,
        silent_audio: t.silent_audio,
        clipped_audio: t.clipped_audio,
        min_class_items: t.min_class_items,
    }
}

/// Prints the table of a report.
pub(super) fn print(report: &Report) -> Result<()> {
    let mut out = super::stdout();
    out.write_all(report.table().as_bytes())?;
    out.flush()?;
    Ok(())
}
