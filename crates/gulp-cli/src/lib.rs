//! The `gulp` command: ingest datasets, then check, recover, inspect (`info`,
//! `dump-meta`, `preview`, `status`), convert, extract, bench and merge gulp
//! directories.
//!
//! The binary and the Python package's `gulp` console script both call
//! [`run`], which parses the command line, runs one subcommand and turns its outcome
//! into an exit status: 0 success, 1 problems found (`gulp check`, `gulp
//! lint`; chunks missing for `gulp status`), 2 an
//! error, printed as `gulp: error: ...` with its causes. A closed stdout (as
//! in `gulp dump-meta DIR | head`) ends the program quietly with status 0.
#![forbid(unsafe_code)]

mod cli;
#[cfg(test)]
mod cli_reference;
mod cmd;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

/// How a command ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Everything fine (exit 0).
    Success,
    /// The command ran, and found problems to report (exit 1).
    ProblemsFound,
}

const EXIT_PROBLEMS: u8 = 1;
const EXIT_ERROR: u8 = 2;

/// Runs the command line `args` (the program name first) and returns its
/// exit status. Usage errors and `--help` print and exit the process, as
/// clap does.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    ExitCode::from(status(args))
}

/// [`run`], with the exit status as a number: 0 success, 1 problems found,
/// 2 an error.
pub fn status<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // clap prints usage errors itself and exits with status 2.
    let cli = Cli::parse_from(args);
    match cmd::set_cache(&cli.cache).and_then(|()| cmd::run(cli.command)) {
        Ok(Outcome::Success) => 0,
        Ok(Outcome::ProblemsFound) => EXIT_PROBLEMS,
        Err(err) if is_broken_pipe(&err) => 0,
        Err(err) => {
            eprintln!("gulp: error: {}", error_chain(&err));
            EXIT_ERROR
        }
    }
}

/// Whether the error is a write to a closed pipe, which is how a reader such
/// as `head` says it has seen enough: not an error.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes, `: `-separated. Some errors of the library
/// crates already include their cause's text in their own message; such a
/// cause is not repeated.
fn error_chain(err: &anyhow::Error) -> String {
    let mut message = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;

    #[test]
    fn error_chain_does_not_repeat_causes() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = anyhow::Error::new(io).context("reading x: no such file");
        assert_eq!(error_chain(&err), "reading x: no such file");
        let err: anyhow::Result<()> = Err(anyhow::anyhow!("inner")).context("outer");
        assert_eq!(error_chain(&err.unwrap_err()), "outer: inner");
    }

    #[test]
    fn broken_pipe_is_recognised_through_context() {
        let io = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let err = anyhow::Error::new(io).context("writing to stdout");
        assert!(is_broken_pipe(&err));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }
}
