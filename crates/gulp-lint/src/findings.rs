//! From the scans of every item to the findings: duplicate groups (exact,
//! near, across directories), per-frame and per-item checks against each
//! directory's distribution, and labels.

use std::collections::{BTreeMap, HashMap};

use gulp_io::GulpDirectory;

use crate::measure::SILENCE_DBFS;
use crate::near::{self, Groups};
use crate::options::{Check, Options};
use crate::report::{Finding, ItemRef};
use crate::scan::{ItemScan, SAMPLES, Unit};

/// Sampled frames of two videos that must be within the distance for the
/// videos to be near duplicates (of [`SAMPLES`]).
const SAMPLES_AGREEING: usize = 5;

/// A finding of `check` over `members` (each an index into `units` and the
/// item's frames concerned, empty for the whole item).
fn finding(
    check: Check,
    units: &[Unit<'_>],
    members: impl IntoIterator<Item = (usize, Vec<usize>)>,
    score: f64,
    detail: String,
) -> Finding {
    Finding {
        check,
        items: members
            .into_iter()
            .map(|(i, frames)| ItemRef {
                dir: units[i].dir,
                id: units[i].id.to_owned(),
                frames,
            })
            .collect(),
        score,
        detail,
    }
}

/// Whole items: `members` with no frames named.
fn whole(members: &[usize]) -> impl Iterator<Item = (usize, Vec<usize>)> + '_ {
    members.iter().map(|&i| (i, Vec::new()))
}

/// The duplicate check of a group of items: `leak` when they span two
/// directories (and leaks are checked), else `within`.
fn duplicate_check(
    members: &[usize],
    units: &[Unit<'_>],
    options: &Options,
    within: Check,
) -> Option<Check> {
    let spans = members
        .iter()
        .any(|&i| units[i].dir != units[members[0]].dir);
    if spans && options.runs(Check::Leak) {
        Some(Check::Leak)
    } else if options.runs(within) {
        Some(within)
    } else {
        None
    }
}

/// Exact and near duplicates of whole items, and exact copies of frames
/// between items.
pub(crate) fn duplicates(
    units: &[Unit<'_>],
    scans: &[ItemScan],
    options: &Options,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let exact_wanted = options.runs(Check::ExactDuplicate) || options.runs(Check::Leak);
    let near_wanted = options.runs(Check::NearDuplicate) || options.runs(Check::Leak);
    if !exact_wanted && !near_wanted {
        return findings;
    }
    // Whole items with the same bytes.
    let mut by_content: HashMap<u128, Vec<usize>> = HashMap::new();
    for (i, scan) in scans.iter().enumerate() {
        if scan.frames > 0 {
            by_content.entry(scan.content).or_default().push(i);
        }
    }
    let mut exact_of = vec![usize::MAX; scans.len()];
    let mut exact_groups: Vec<Vec<usize>> =
        by_content.into_values().filter(|g| g.len() > 1).collect();
    exact_groups.sort();
    for group in &exact_groups {
        for &i in group {
            exact_of[i] = group[0];
        }
        if let Some(check) = duplicate_check(group, units, options, Check::ExactDuplicate) {
            findings.push(finding(
                check,
                units,
                whole(group),
                0.0,
                format!("{} items with the same stored bytes", group.len()),
            ));
        }
    }
    if exact_wanted {
        findings.extend(frame_copies(units, scans, &exact_of, options));
    }
    if near_wanted {
        findings.extend(near_duplicates(units, scans, &exact_of, options));
    }
    findings
}

/// Frames of different items with the same stored bytes (not blank ones,
/// not between whole copies), one finding per set of items.
fn frame_copies(
    units: &[Unit<'_>],
    scans: &[ItemScan],
    exact_of: &[usize],
    options: &Options,
) -> Vec<Finding> {
    let mut by_hash: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
    for (i, scan) in scans.iter().enumerate() {
        for (k, h) in scan.frame_hashes.iter().enumerate() {
            if let Some(h) = h {
                by_hash.entry(*h).or_default().push((i, k));
            }
        }
    }
    // The items sharing frames → each item's shared frames.
    let mut sets: BTreeMap<Vec<usize>, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for places in by_hash.into_values() {
        let mut items: Vec<usize> = places.iter().map(|p| p.0).collect();
        items.sort_unstable();
        items.dedup();
        let whole_copies = items
            .iter()
            .all(|&i| exact_of[i] != usize::MAX && exact_of[i] == exact_of[items[0]]);
        if items.len() < 2 || whole_copies {
            continue;
        }
        let entry = sets.entry(items).or_default();
        for (i, k) in places {
            entry.entry(i).or_default().push(k);
        }
    }
    let mut findings = Vec::new();
    for (items, frames) in sets {
        let Some(check) = duplicate_check(&items, units, options, Check::ExactDuplicate) else {
            continue;
        };
        let shared = frames.values().map(Vec::len).max().unwrap_or(0);
        let members = frames.into_iter().map(|(i, mut ks)| {
            ks.sort_unstable();
            ks.dedup();
            (i, ks)
        });
        findings.push(finding(
            check,
            units,
            members,
            0.0,
            format!(
                "{shared} frames with the same stored bytes in {} items",
                items.len()
            ),
        ));
    }
    findings
}

/// Items whose sampled frames have close perceptual hashes: one finding per
/// group (whole copies of a member included), the score its largest
/// distance in bits.
fn near_duplicates(
    units: &[Unit<'_>],
    scans: &[ItemScan],
    exact_of: &[usize],
    options: &Options,
) -> Vec<Finding> {
    let limit = options.thresholds.near_distance;
    // One representative per group of whole copies.
    // Keyed by the middle sample's whole and centre hashes: a crop's whole
    // meets its source's centre.
    let hashes: Vec<(u64, usize)> = scans
        .iter()
        .enumerate()
        .filter(|&(i, _)| exact_of[i] == usize::MAX || exact_of[i] == i)
        .filter_map(|(i, s)| s.signature.map(|sig| (sig, i)))
        .flat_map(|(sig, i)| [(sig.full[SAMPLES / 2], i), (sig.centre[SAMPLES / 2], i)])
        .collect();
    let mut groups = Groups::new(scans.len());
    let joined = near::search(&hashes, &mut groups, |a, b| {
        let (Some(sa), Some(sb)) = (scans[a].signature, scans[b].signature) else {
            return None;
        };
        // Called for every candidate pair: no allocation.
        let mut d = [0u32; SAMPLES];
        for (k, slot) in d.iter_mut().enumerate() {
            *slot = sa.distance(&sb, k);
        }
        d.sort_unstable();
        let worst = d[SAMPLES_AGREEING - 1];
        (worst <= limit).then_some(worst)
    });
    let mut worst: HashMap<usize, u32> = HashMap::new();
    for &(a, _, d) in &joined {
        let root = groups.find(a);
        let w = worst.entry(root).or_insert(0);
        *w = (*w).max(d);
    }
    // Copies of a representative join its group.
    for (i, &e) in exact_of.iter().enumerate() {
        if e != usize::MAX && e != i {
            groups.union(e, i);
        }
    }
    let mut findings = Vec::new();
    for group in groups.multi() {
        let reps = group
            .iter()
            .filter(|&&i| exact_of[i] == usize::MAX || exact_of[i] == i)
            .count();
        if reps < 2 {
            continue; // only whole copies: an exact finding already
        }
        let distance = group
            .iter()
            .filter_map(|i| worst.get(i))
            .max()
            .copied()
            .unwrap_or(0);
        let Some(check) = duplicate_check(&group, units, options, Check::NearDuplicate) else {
            continue;
        };
        findings.push(finding(
            check,
            units,
            whole(&group),
            f64::from(distance),
            format!(
                "{} items within {distance} bits of perceptual hash",
                group.len()
            ),
        ));
    }
    findings
}

/// The per-frame findings of every item, by check.
pub(crate) fn per_frame(units: &[Unit<'_>], scans: &[ItemScan], check: Check) -> Vec<Finding> {
    scans
        .iter()
        .enumerate()
        .filter_map(|(i, scan)| {
            let f = scan.flagged.iter().find(|f| f.check == check)?;
            Some(finding(
                check,
                units,
                [(i, f.frames.clone())],
                f.score,
                format!("{} of {} frames", f.frames.len(), scan.frames),
            ))
        })
        .collect()
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}

/// Short items, odd sizes and odd aspect ratios, each against its own
/// directory.
pub(crate) fn per_item(
    units: &[Unit<'_>],
    scans: &[ItemScan],
    n_dirs: usize,
    options: &Options,
) -> Vec<Finding> {
    let t = &options.thresholds;
    let mut findings = Vec::new();
    for d in 0..n_dirs {
        let mine: Vec<usize> = (0..units.len()).filter(|&i| units[i].dir == d).collect();
        let frames = median(mine.iter().map(|&i| scans[i].frames as f64).collect());
        if options.runs(Check::Short) && frames.is_some_and(|m| m > 1.0) {
            for &i in &mine {
                if scans[i].frames < t.min_frames {
                    findings.push(finding(
                        Check::Short,
                        units,
                        whole(&[i]),
                        scans[i].frames as f64,
                        format!("{} frames", scans[i].frames),
                    ));
                }
            }
        }
        let sizes: Vec<(usize, f64, f64)> = mine
            .iter()
            .filter_map(|&i| {
                let (w, h) = scans[i].size?;
                Some((i, ((w * h) as f64).sqrt(), w as f64 / h as f64))
            })
            .collect();
        let side = median(sizes.iter().map(|s| s.1).collect());
        let aspect = median(sizes.iter().map(|s| s.2).collect());
        // How far a value is from the directory's median, either way.
        let ratio = |x: f64, m: f64| if x > m { x / m } else { m / x };
        for &(i, s, a) in &sizes {
            let (w, h) = scans[i].size.unwrap_or((0, 0));
            let odd = [
                (Check::OddSize, side, s, t.odd_size),
                (Check::OddAspect, aspect, a, t.odd_aspect),
            ];
            for (check, median, value, threshold) in odd {
                let Some(m) = median.filter(|_| options.runs(check)) else {
                    continue;
                };
                let score = ratio(value, m);
                if score >= threshold {
                    let detail = match check {
                        Check::OddSize => format!("{w}x{h}, median side {m:.0}"),
                        _ => format!("{w}x{h} (aspect {a:.2}), median aspect {m:.2}"),
                    };
                    findings.push(finding(check, units, whole(&[i]), score, detail));
                }
            }
        }
    }
    findings
}

/// Silent and clipped sound, item by item (items without a track are not
/// judged): the score is the RMS level in dBFS, or the fraction of samples
/// at full scale.
pub(crate) fn sound(units: &[Unit<'_>], scans: &[ItemScan], options: &Options) -> Vec<Finding> {
    let t = &options.thresholds;
    let mut findings = Vec::new();
    for (i, scan) in scans.iter().enumerate() {
        let Some(level) = scan.sound else {
            continue;
        };
        if options.runs(Check::SilentAudio) && level.rms_dbfs <= t.silent_audio {
            let detail = if level.rms_dbfs <= SILENCE_DBFS {
                format!("digital silence (RMS {SILENCE_DBFS} dBFS or less)")
            } else {
                format!("RMS {:.1} dBFS", level.rms_dbfs)
            };
            findings.push(finding(
                Check::SilentAudio,
                units,
                whole(&[i]),
                level.rms_dbfs,
                detail,
            ));
        }
        if options.runs(Check::ClippedAudio) && level.full_scale >= t.clipped_audio {
            findings.push(finding(
                Check::ClippedAudio,
                units,
                whole(&[i]),
                level.full_scale,
                format!("{:.2} % of samples at full scale", level.full_scale * 100.0),
            ));
        }
    }
    findings
}

/// A label's text: a string as it is, a number as its JSON text.
fn label_text(value: &gulp_format::Value) -> Option<String> {
    match value {
        gulp_format::Value::String(s) => Some(s.clone()),
        gulp_format::Value::Int(i) => Some(i.to_string()),
        gulp_format::Value::BigInt(b) => Some(b.as_str().to_owned()),
        gulp_format::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A directory's items per class.
pub(crate) type Histogram = BTreeMap<String, usize>;

/// The class histogram of each directory and the label findings: classes
/// with too few items, labels missing from `label2idx.json`, items without
/// the label key (when other items have it).
pub(crate) fn labels(
    units: &[Unit<'_>],
    dirs: &[GulpDirectory],
    options: &Options,
) -> crate::error::Result<(Vec<Histogram>, Vec<Finding>)> {
    let key = options.label_key.as_str();
    let mut histograms = Vec::with_capacity(dirs.len());
    let mut findings = Vec::new();
    for (d, dir) in dirs.iter().enumerate() {
        let mut classes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut unlabelled = Vec::new();
        for (i, unit) in units.iter().enumerate().filter(|(_, u)| u.dir == d) {
            let meta = unit.reader.item(unit.id)?;
            match meta
                .first_meta_data()
                .and_then(|m| m.get(key))
                .and_then(label_text)
            {
                Some(label) => classes.entry(label).or_default().push(i),
                None => unlabelled.push(i),
            }
        }
        if !classes.is_empty() && !unlabelled.is_empty() {
            findings.push(finding(
                Check::Label,
                units,
                whole(&unlabelled),
                unlabelled.len() as f64,
                format!("items without the label key {key:?}"),
            ));
        }
        for (label, members) in &classes {
            if members.len() < options.thresholds.min_class_items {
                findings.push(finding(
                    Check::Label,
                    units,
                    whole(members),
                    members.len() as f64,
                    format!(
                        "class {label:?} has {} items (fewer than {})",
                        members.len(),
                        options.thresholds.min_class_items
                    ),
                ));
            }
        }
        if let Some(index) = dir.labels()? {
            for (label, members) in &classes {
                if index.index(label).is_none() {
                    findings.push(finding(
                        Check::Label,
                        units,
                        whole(members),
                        members.len() as f64,
                        format!("label {label:?} is not in label2idx.json"),
                    ));
                }
            }
        }
        histograms.push(classes.into_iter().map(|(l, m)| (l, m.len())).collect());
    }
    Ok((histograms, findings))
}
