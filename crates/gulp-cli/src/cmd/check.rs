//! `gulp check`: run every check and list the problems.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::Outcome;
use crate::cli::CheckArgs;
use gulp_io::check::{Options, Report, check_directory};

#[derive(Serialize)]
struct JsonReport<'a> {
    dir: String,
    clean: bool,
    #[serde(flatten)]
    report: &'a Report,
}

pub(super) fn run(args: &CheckArgs) -> Result<Outcome> {
    let options = Options {
        decode: args.decode,
        threads: super::threads(None),
    };
    let bar = super::progress("frames checked");
    let report = check_directory(&args.dir, options, &|n| bar.inc(n))
        .with_context(|| format!("cannot read directory {}", args.dir.display()))?;
    bar.finish_and_clear();

    let mut out = super::stdout();
    if args.json {
        let json = JsonReport {
            dir: args.dir.to_string_lossy().into_owned(),
            clean: report.is_clean(),
            report: &report,
        };
        super::write_json(&mut out, &json)?;
    } else {
        for problem in &report.problems {
            writeln!(out, "{problem}")?;
        }
        for note in &report.notes {
            writeln!(out, "note: {note}")?;
        }
        write!(
            out,
            "{}: {} chunks, {} items, {} frames, {} bytes",
            args.dir.display(),
            report.chunks,
            report.items,
            report.frames,
            report.bytes
        )?;
        if args.decode {
            write!(out, ", {} frames decoded", report.decoded)?;
        }
        match report.problems.len() {
            0 => write!(out, ": no problems found")?,
            1 => write!(out, ": 1 problem")?,
            n => write!(out, ": {n} problems")?,
        }
        let leftovers = report
            .notes
            .iter()
            .filter(|n| n.kind != gulp_io::check::ProblemKind::IndexFile)
            .count();
        match leftovers {
            0 => writeln!(out)?,
            n => writeln!(
                out,
                "; {n} leftover{} of an interrupted write, not damage \
                 (`gulp recover {}` clears {})",
                if n == 1 { "" } else { "s" },
                args.dir.display(),
                if n == 1 { "it" } else { "them" }
            )?,
        }
        out.flush()?;
    }
    Ok(if report.is_clean() {
        Outcome::Success
    } else {
        Outcome::ProblemsFound
    })
}
