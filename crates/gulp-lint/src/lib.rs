//! Find what is wrong with a gulp dataset before training on it.
//!
//! [`lint`] reads every item of one or more gulp directories (local or
//! `s3://`) on all cores, hashes each frame's stored bytes, decodes it to
//! luma at the least DCT scale that serves the checks (1/8, the DC
//! coefficients alone, for frames of 256 pixels and more) and measures it;
//! then it finds exact and near duplicates (within and across directories:
//! leaks), dark, light, blank, low-information and blurry frames, frozen
//! runs, short items, odd sizes and aspect ratios, silent and clipped
//! sound (of items ingested with it), and label problems. Each
//! [`Check`] has a documented threshold in [`Thresholds`]. The [`Report`]
//! serialises to the JSON of `gulp lint --json` and gives the ids to keep
//! ([`Report::keep`]), one per group of copies.
//!
//! # Example
//!
//! ```
//! use gulp_io::ChunkWriter;
//! use gulp_format::Value;
//! use gulp_lint::{Check, Options, lint};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../gulp-io/tests/data/");
//! // Two items with the same frame, and a white one.
//! let noise = std::fs::read(format!("{data}noise-24x16.jpg"))?;
//! let white = std::fs::read(format!("{data}white-8x8.jpg"))?;
//! let mut writer = ChunkWriter::builder().create(dir.path(), 0)?;
//! writer.append("a", Value::Null, [&noise])?;
//! writer.append("b", Value::Null, [&noise])?;
//! writer.append("c", Value::Null, [&white])?;
//! writer.finish()?;
//!
//! let report = lint(&[dir.path()], &Options::default(), &|_| {})?;
//! assert_eq!(report.items, 3);
//! let checks: Vec<Check> = report.findings.iter().map(|f| f.check).collect();
//! assert!(checks.contains(&Check::ExactDuplicate) && checks.contains(&Check::Light));
//! // Keep one of the copies; drop the light item.
//! assert_eq!(report.keep(&[Check::Light]), vec![vec!["a"]]);
//! # Ok(())
//! # }
//! ```
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

mod error;
mod findings;
mod measure;
mod near;
mod options;
mod report;
mod scan;

use std::path::{Path, PathBuf};

use gulp_io::GulpDirectory;

pub use crate::error::{Error, Result};
pub use crate::options::{
    BLANK, BLURRY, CLIPPED_AUDIO, Check, DARK, FROZEN_DIFF, FROZEN_FRAMES, LABEL_KEY, LIGHT,
    LOW_INFORMATION, MIN_CLASS_ITEMS, MIN_FRAMES, NEAR_DISTANCE, ODD_ASPECT, ODD_SIZE, Options,
    SILENT_AUDIO, Thresholds,
};
pub use crate::report::{Finding, ItemRef, Report, Undecodable};

/// Lints the gulp directories `dirs` (local paths or `s3://` URLs, opened
/// with [`Options::open`]); `progress(frames)` is called as items are read.
pub fn lint<P: AsRef<Path>>(
    dirs: &[P],
    options: &Options,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Report> {
    let opened = dirs
        .iter()
        .map(|d| {
            options.open.open(d.as_ref()).map_err(|source| Error::Open {
                path: d.as_ref().to_owned(),
                source,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    lint_directories(&opened, options, progress)
}

/// [`lint`] on directories already open (as `gulp ingest --lint` has its
/// output).
pub fn lint_directories(
    dirs: &[GulpDirectory],
    options: &Options,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Report> {
    let units = scan::units(dirs)?;
    let scans = scan::scan(&units, options, progress)?;
    let mut findings = findings::duplicates(&units, &scans, options);
    for check in [
        Check::Dark,
        Check::Light,
        Check::Blank,
        Check::LowInformation,
        Check::Blurry,
        Check::Frozen,
    ] {
        if options.runs(check) {
            findings.extend(findings::per_frame(&units, &scans, check));
        }
    }
    findings.extend(findings::per_item(&units, &scans, dirs.len(), options));
    findings.extend(findings::sound(&units, &scans, options));
    let mut classes = Vec::new();
    if options.runs(Check::Label) {
        let (histograms, label_findings) = findings::labels(&units, dirs, options)?;
        classes = histograms;
        findings.extend(label_findings);
    }
    // Report order: by check, then by first item (stable within a check).
    let position = |item: &ItemRef| (item.dir, item.id.clone());
    findings.sort_by(|a, b| {
        a.check.cmp(&b.check).then_with(|| {
            a.items
                .first()
                .map(position)
                .cmp(&b.items.first().map(position))
        })
    });
    let undecodable = units
        .iter()
        .zip(&scans)
        .flat_map(|(unit, scan)| {
            scan.undecodable.iter().map(|(frame, error)| Undecodable {
                dir: unit.dir,
                id: unit.id.to_owned(),
                frame: *frame,
                error: error.clone(),
            })
        })
        .collect();
    let mut checks = options.checks.clone();
    checks.sort();
    Ok(Report {
        items: units.len(),
        findings,
        classes,
        undecodable,
        dirs: dirs
            .iter()
            .map(|d| d.path().to_owned())
            .collect::<Vec<PathBuf>>(),
        ids: dirs
            .iter()
            .map(|d| d.ids().map(str::to_owned).collect())
            .collect(),
        frames: scans.iter().map(|s| s.frames as u64).sum(),
        checks,
        thresholds: options.thresholds.clone(),
    })
}
