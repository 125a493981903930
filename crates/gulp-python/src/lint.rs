//! `gulp.lint`: the arguments to a [`gulp_lint::lint`] call; the report
//! comes back as its JSON text (`gulp.lint` wraps it).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use gulp_lint::{Check, Options, Thresholds};
use pyo3::prelude::*;

use crate::errors::{Class, lint_err};

fn parse_checks(names: &[String]) -> PyResult<Vec<Check>> {
    names
        .iter()
        .map(|n| n.parse::<Check>().map_err(|e| Class::Invalid.err(e)))
        .collect()
}

/// Lints the directories as `gulp lint` does; writes `ids_out` (one file
/// per directory) when given; returns the report as JSON text.
#[pyfunction]
#[pyo3(signature = (paths, checks = None, thresholds = None, ids_out = None, drop = None,
                    threads = None, label_key = None))]
#[allow(clippy::too_many_arguments)] // one per keyword of gulp.lint
pub(crate) fn lint(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    checks: Option<Vec<String>>,
    thresholds: Option<HashMap<String, f64>>,
    ids_out: Option<Vec<PathBuf>>,
    drop: Option<Vec<String>>,
    threads: Option<NonZeroUsize>,
    label_key: Option<String>,
) -> PyResult<String> {
    let mut t = Thresholds::default();
    for (name, value) in thresholds.unwrap_or_default() {
        t.set(&name, value).map_err(|e| Class::Invalid.err(e))?;
    }
    let defaults = Options::default();
    let options = Options {
        checks: checks.map_or(Ok(defaults.checks), |c| parse_checks(&c))?,
        thresholds: t,
        threads: threads.map_or(0, NonZeroUsize::get),
        label_key: label_key.unwrap_or(defaults.label_key),
        open: defaults.open,
    };
    let drop = parse_checks(&drop.unwrap_or_default())?;
    py.detach(|| {
        let report = gulp_lint::lint(&paths, &options, &|_| {})?;
        if let Some(files) = &ids_out {
            report.write_ids(files, &drop)?;
        }
        serde_json::to_string(&report)
            .map_err(|e| gulp_lint::Error::Internal(format!("serialising the report: {e}")))
    })
    .map_err(lint_err)
}
