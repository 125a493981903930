//! The report of a run: findings in the JSON shape of `gulp lint --json`,
//! the ids to keep (`--ids-out`), and the terminal table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::options::{Check, Thresholds};

/// An item of a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemRef {
    /// The index of its directory, in the order they were given.
    pub dir: usize,
    /// Its id.
    pub id: String,
    /// The frames concerned: for per-frame checks the frames found; for a
    /// duplicate finding, empty when the whole item is a copy, else the
    /// frames that are.
    pub frames: Vec<usize>,
}

/// One finding: a check, the items it concerns (a duplicate finding lists
/// its whole group, the item `--ids-out` keeps first), and a score whose
/// meaning depends on the check (docs/lint.md): the measure compared with
/// the threshold, or the size of what was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The check.
    pub check: Check,
    /// The items.
    pub items: Vec<ItemRef>,
    /// The score.
    pub score: f64,
    /// What was found, in words (the class of a label finding, ...).
    pub detail: String,
}

/// A frame that could not be decoded (not a finding: `gulp check --decode`
/// says what is wrong with it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undecodable {
    /// Directory index.
    pub dir: usize,
    /// Item id.
    pub id: String,
    /// Frame index.
    pub frame: usize,
    /// The decoder's message.
    pub error: String,
}

/// What a run found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Items read, over all directories.
    pub items: usize,
    /// The findings, by check in [`Check::ALL`] order.
    pub findings: Vec<Finding>,
    /// Each directory's class histogram (label → items), when the `label`
    /// check ran.
    pub classes: Vec<BTreeMap<String, usize>>,
    /// Frames that did not decode.
    pub undecodable: Vec<Undecodable>,
    /// The directories, in order.
    #[serde(skip)]
    pub dirs: Vec<PathBuf>,
    /// Every id of each directory, in directory order.
    #[serde(skip)]
    pub ids: Vec<Vec<String>>,
    /// Frames read.
    #[serde(skip)]
    pub frames: u64,
    /// The checks that ran.
    #[serde(skip)]
    pub checks: Vec<Check>,
    /// The thresholds they ran with.
    #[serde(skip)]
    pub thresholds: Thresholds,
}

impl Report {
    /// The ids to keep, per directory, in directory order: one item of each
    /// group of whole-item copies (the first, in the order of the
    /// directories and then of each directory), and no item with a finding
    /// of a check in `drop`.
    pub fn keep(&self, drop: &[Check]) -> Vec<Vec<&str>> {
        let mut out: Vec<std::collections::HashSet<&str>> =
            vec![std::collections::HashSet::new(); self.ids.len()];
        for finding in &self.findings {
            let copies = finding.check.is_duplicate()
                && finding.items.iter().all(|item| item.frames.is_empty());
            let skip = usize::from(copies && !drop.contains(&finding.check));
            if copies || drop.contains(&finding.check) {
                for item in finding.items.iter().skip(skip) {
                    if let Some(set) = out.get_mut(item.dir) {
                        set.insert(&item.id);
                    }
                }
            }
        }
        self.ids
            .iter()
            .zip(&out)
            .map(|(ids, dropped)| {
                ids.iter()
                    .map(String::as_str)
                    .filter(|id| !dropped.contains(id))
                    .collect()
            })
            .collect()
    }

    /// Writes the ids [`keep`](Self::keep) gives, one per line, to `paths`
    /// (one per directory, in order); each file is written under a
    /// temporary name and renamed, so a reader never sees half a list.
    pub fn write_ids(&self, paths: &[PathBuf], drop: &[Check]) -> Result<()> {
        if paths.len() != self.ids.len() {
            return Err(Error::Options(format!(
                "{} id files for {} directories: give one per directory, in the same order",
                paths.len(),
                self.ids.len()
            )));
        }
        for (path, ids) in paths.iter().zip(self.keep(drop)) {
            let mut text = String::with_capacity(ids.iter().map(|id| id.len() + 1).sum());
            for id in ids {
                text.push_str(id);
                text.push('\n');
            }
            write_atomic(path, text.as_bytes())?;
        }
        Ok(())
    }

    /// Writes the report as JSON (`{"items": N, "findings": [...], ...}`).
    pub fn write_json(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Internal(format!("serialising the report: {e}")))?;
        text.push(b'\n');
        write_atomic(path, &text)
    }

    /// The terminal summary: one row per check that ran, with its
    /// threshold, findings and items, then the classes and undecodable
    /// frames.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<16} {:>8} {:>8}  threshold",
            "check", "findings", "items"
        );
        for &check in &self.checks {
            let found: Vec<&Finding> = self.findings.iter().filter(|f| f.check == check).collect();
            let items: usize = found.iter().map(|f| f.items.len()).sum();
            let _ = writeln!(
                out,
                "{:<16} {:>8} {:>8}  {}",
                check.name(),
                found.len(),
                items,
                threshold_text(check, &self.thresholds)
            );
        }
        for (d, classes) in self.classes.iter().enumerate() {
            if classes.is_empty() {
                continue;
            }
            let mut counts: Vec<(&String, &usize)> = classes.iter().collect();
            counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let shown: Vec<String> = counts
                .iter()
                .take(5)
                .map(|(label, n)| format!("{label:?} {n}"))
                .collect();
            let _ = writeln!(
                out,
                "{}: {} classes ({}{})",
                self.dirs
                    .get(d)
                    .map_or(String::new(), |p| p.display().to_string()),
                classes.len(),
                shown.join(", "),
                if counts.len() > 5 { ", ..." } else { "" }
            );
        }
        if !self.undecodable.is_empty() {
            let _ = writeln!(
                out,
                "{} frames did not decode (gulp check --decode says why)",
                self.undecodable.len()
            );
        }
        let items: std::collections::HashSet<(usize, &str)> = self
            .findings
            .iter()
            .flat_map(|f| f.items.iter().map(|i| (i.dir, i.id.as_str())))
            .collect();
        let _ = writeln!(
            out,
            "{} items, {} frames: {} findings on {} items",
            self.items,
            self.frames,
            self.findings.len(),
            items.len()
        );
        out
    }
}

/// A check's threshold as `--help` and docs/lint.md say it.
fn threshold_text(check: Check, t: &Thresholds) -> String {
    match check {
        Check::ExactDuplicate => "same stored bytes".into(),
        Check::NearDuplicate | Check::Leak => {
            format!("hash distance <= {} (--near-distance)", t.near_distance)
        }
        Check::Dark => format!("luma p99 <= {} (--dark)", t.dark),
        Check::Light => format!("luma p5 >= {} (--light)", t.light),
        Check::Blank => format!("luma std <= {} (--blank)", t.blank),
        Check::LowInformation => {
            format!("entropy <= {} bits (--low-information)", t.low_information)
        }
        Check::Blurry => format!("blur score <= {} (--blurry)", t.blurry),
        Check::Frozen => format!(
            ">= {} frames within {} (--frozen-frames, --frozen-diff)",
            t.frozen_frames, t.frozen_diff
        ),
        Check::Short => format!("< {} frames (--min-frames)", t.min_frames),
        Check::OddSize => format!("{}x off the median side (--odd-size)", t.odd_size),
        Check::OddAspect => format!("{}x off the median aspect (--odd-aspect)", t.odd_aspect),
        Check::SilentAudio => format!("RMS <= {} dBFS (--silent-audio)", t.silent_audio),
        Check::ClippedAudio => format!(
            ">= {} of samples at full scale (--clipped-audio)",
            t.clipped_audio
        ),
        Check::Label => format!("classes < {} items (--min-class-items)", t.min_class_items),
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let fail = |source| Error::Write {
        path: path.to_owned(),
        source,
    };
    let name = path
        .file_name()
        .ok_or_else(|| fail(std::io::Error::other("not a file name")))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let mut file = std::fs::File::create(&tmp).map_err(fail)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(fail)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}
