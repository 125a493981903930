//! `gulp ingest`: run a built-in adapter through the ingest pipeline.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use gulp_ingest::adapters::Dataset;
use gulp_ingest::{
    DatasetAdapter, FrameOptions, IngestOptions, IngestReport, Progress, Shard, ingest,
};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{IngestArgs, IngestKind};

/// The task of `--shard I/N|auto`.
fn shard_of(args: &IngestArgs) -> Result<Option<Shard>> {
    let Some(text) = args.shard.as_deref() else {
        return Ok(None);
    };
    let count = args.shard_count.map(std::num::NonZeroUsize::get);
    let shard = if text == "auto" {
        Shard::from_env(|k| std::env::var(k).ok(), count)
    } else {
        Shard::parse(text)
    };
    shard.map(Some).map_err(|e| anyhow::anyhow!("--shard: {e}"))
}

/// Runs `gulp ingest <kind>`.
pub fn run(kind: IngestKind) -> Result<Outcome> {
    let (dataset, output, args) = adapter(kind)?;
    let shard = shard_of(&args)?;
    if shard.is_some() && args.shuffle && args.seed.is_none() {
        anyhow::bail!(
            "--shuffle with --shard needs --seed: every task must shuffle the list the same way"
        );
    }
    let seed = args
        .shuffle
        .then(|| args.seed.unwrap_or_else(|| fastrand::u64(..)));
    let opts = IngestOptions {
        items_per_chunk: args.videos_per_chunk.get(),
        workers: super::threads(args.num_workers),
        frames: FrameOptions {
            short_edge: args.frame_size.map(std::num::NonZeroU32::get),
            quality: args.quality,
            frame_rate: args.frame_rate,
            subsampling: args.subsampling.into(),
            decode_threads: args.decode_threads,
        },
        meta_format: args.meta_format.into(),
        strict: args.strict,
        shuffle_seed: seed,
        fsync: true,
        shard,
    };
    if let Some(rate) = opts.frames.frame_rate {
        anyhow::ensure!(
            rate.is_finite() && rate > 0.0,
            "--frame-rate must be a positive number, not {rate}"
        );
    }
    let bar = (!args.quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new(dataset.len() as u64);
        let style = indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} items {msg} [{elapsed_precise}, eta {eta}]",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    });
    let mut on_progress = |p: &Progress| {
        if let Some(bar) = &bar {
            bar.set_length(p.items_total as u64);
            bar.set_position(p.items_done as u64);
            bar.set_message(format!(
                "· {} frames · {} · {} chunks · {} failed",
                p.frames,
                human_bytes(p.bytes),
                p.chunks,
                p.items_failed
            ));
        }
    };
    let result = ingest(&dataset, &output, &opts, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.with_context(|| format!("ingest into {} stopped", output.display()))?;
    // Losses are named in every mode: --quiet drops the progress and the
    // summary only.
    print_losses(&report)?;
    if let Some(path) = &args.report {
        write_report(path, &report, &output, seed)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    if !args.quiet {
        print_summary(&report, &output, seed)?;
    }
    Ok(Outcome::Success)
}

/// The JSON form of an ingest report (`--report FILE`).
#[derive(Serialize)]
struct JsonReport<'a> {
    output: &'a Path,
    items: usize,
    frames: u64,
    bytes: u64,
    chunks: &'a [u64],
    already_present: usize,
    seconds: f64,
    shuffle_seed: Option<u64>,
    skipped: Vec<JsonItem>,
    warnings: Vec<JsonItem>,
    recovered: Vec<String>,
}

#[derive(Serialize)]
struct JsonItem {
    /// Position in the dataset's order.
    index: usize,
    id: String,
    error: String,
}

fn json_items(list: &[gulp_ingest::Skipped]) -> Vec<JsonItem> {
    list.iter()
        .map(|s| JsonItem {
            index: s.index,
            id: s.id.clone(),
            error: s.error.to_string(),
        })
        .collect()
}

/// Writes the report next to `path` and renames it into place, so that a
/// reader never sees half of it.
fn write_report(
    path: &Path,
    report: &IngestReport,
    output: &Path,
    seed: Option<u64>,
) -> Result<()> {
    let json = JsonReport {
        output,
        items: report.items,
        frames: report.frames,
        bytes: report.bytes,
        chunks: &report.chunks,
        already_present: report.already_present,
        seconds: report.elapsed.as_secs_f64(),
        shuffle_seed: seed,
        skipped: json_items(&report.skipped),
        warnings: json_items(&report.warnings),
        recovered: report.recovered.iter().map(ToString::to_string).collect(),
    };
    let mut text = serde_json::to_string_pretty(&json)?;
    text.push('\n');
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// One line on stderr per item skipped, recovered or warned about.
fn print_losses(report: &IngestReport) -> Result<()> {
    let mut err = std::io::stderr().lock();
    for r in &report.recovered {
        writeln!(err, "gulp: recovered: {r}")?;
    }
    for w in &report.warnings {
        writeln!(err, "gulp: warning: {w}")?;
    }
    for s in &report.skipped {
        writeln!(err, "gulp: skipped: {s}")?;
    }
    Ok(())
}

fn adapter(kind: IngestKind) -> Result<(Dataset, std::path::PathBuf, IngestArgs)> {
    let ctx = |what: &str, p: &Path| format!("cannot read the {what} {}", p.display());
    Ok(match kind {
        IngestKind::TwentyBnJson {
            input_json,
            videos_dir,
            output_dir,
            label_name,
            opts,
        } => (
            Dataset::twenty_bn_json(&input_json, &videos_dir, &output_dir, &label_name)
                .with_context(|| ctx("20BN JSON list", &input_json))?,
            output_dir,
            opts,
        ),
        IngestKind::TwentyBnCsvWebm {
            input_csv,
            videos_dir,
            output_dir,
            opts,
        } => (
            Dataset::twenty_bn_csv_webm(&input_csv, &videos_dir, &output_dir)
                .with_context(|| ctx("20BN CSV list", &input_csv))?,
            output_dir,
            opts,
        ),
        IngestKind::TwentyBnCsvJpeg {
            input_csv,
            jpeg_dir,
            output_dir,
            opts,
        } => (
            Dataset::twenty_bn_csv_jpeg(&input_csv, &jpeg_dir, &output_dir)
                .with_context(|| ctx("20BN CSV list", &input_csv))?,
            output_dir,
            opts,
        ),
        IngestKind::VideoFolder {
            videos_dir,
            output_dir,
            opts,
        } => (
            Dataset::video_folder(&videos_dir, &output_dir)
                .with_context(|| ctx("video folder", &videos_dir))?,
            output_dir,
            opts,
        ),
        IngestKind::ImageFolder {
            images_dir,
            output_dir,
            opts,
        } => (
            Dataset::image_folder(&images_dir, &output_dir)
                .with_context(|| ctx("image folder", &images_dir))?,
            output_dir,
            opts,
        ),
        IngestKind::ImageList {
            list_file,
            output_dir,
            root_path,
            opts,
        } => (
            Dataset::image_list(&list_file, &root_path, &output_dir)
                .with_context(|| ctx("image list", &list_file))?,
            output_dir,
            opts,
        ),
        IngestKind::Kinetics {
            input_csv,
            videos_dir,
            output_dir,
            opts,
        } => (
            Dataset::kinetics(&input_csv, &videos_dir, &output_dir)
                .with_context(|| ctx("Kinetics CSV", &input_csv))?,
            output_dir,
            opts,
        ),
        IngestKind::Activitynet {
            input_json,
            videos_dir,
            output_dir,
            phase,
            opts,
        } => (
            Dataset::activitynet(&input_json, &videos_dir, &phase)
                .with_context(|| ctx("ActivityNet JSON", &input_json))?,
            output_dir,
            opts,
        ),
    })
}

fn print_summary(report: &IngestReport, output: &Path, seed: Option<u64>) -> Result<()> {
    let mut out = super::stdout();
    let secs = report.elapsed.as_secs_f64();
    let chunks = match (report.chunks.first(), report.chunks.last()) {
        (Some(a), Some(b)) if a == b => format!("chunk {a}"),
        (Some(a), Some(b)) => format!("chunks {a}..={b}"),
        _ => "no new chunks".to_string(),
    };
    writeln!(
        out,
        "{}: {} items, {} frames, {} in {chunks}",
        output.display(),
        report.items,
        report.frames,
        human_bytes(report.bytes)
    )?;
    if report.already_present > 0 {
        writeln!(
            out,
            "{} items already present, left as they are",
            report.already_present
        )?;
    }
    if !report.skipped.is_empty() {
        writeln!(
            out,
            "{} items skipped (listed on stderr)",
            report.skipped.len()
        )?;
    }
    if let Some(seed) = seed {
        writeln!(out, "shuffled with --seed {seed}")?;
    }
    writeln!(
        out,
        "{} elapsed, {:.1} frames/s",
        format_duration(report.elapsed),
        if secs > 0.0 {
            report.frames as f64 / secs
        } else {
            0.0
        }
    )?;
    out.flush()?;
    Ok(())
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.2} s")
    } else {
        format!("{}m{:02.0}s", (s / 60.0).floor(), s % 60.0)
    }
}
