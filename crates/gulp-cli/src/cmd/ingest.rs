//! `gulp ingest`: run a built-in adapter through the ingest pipeline.

use std::io::{IsTerminal, Write};
use std::num::{NonZeroU32, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use gulp_ingest::manifest::ManifestOptions;
use gulp_ingest::video::AudioRequest;
use gulp_ingest::{
    AdapterKind, AdapterOptions, DatasetAdapter, FrameOptions, IngestOptions, IngestReport,
    IngestRequest, Progress, Shard, ingest,
};
use serde::Serialize;

use crate::Outcome;
use crate::cli::{IngestArgs, IngestKind};

/// Runs `gulp ingest <kind>`.
pub(super) fn run(kind: IngestKind) -> Result<Outcome> {
    let (request, args, seed) = request(kind)?;
    let dataset = request.dataset().with_context(|| {
        format!(
            "cannot read the {} {}",
            request.kind.source(),
            request.inputs[0].display()
        )
    })?;
    let (output, opts) = (&request.output, &request.options);
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
    let result = ingest(&dataset, output, opts, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = result.with_context(|| format!("ingest into {} stopped", output.display()))?;
    // Losses are named in every mode: --quiet drops the progress and the
    // summary only.
    print_losses(&report)?;
    if let Some(path) = &args.report {
        write_report(path, &report, output, seed)
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    if !args.quiet {
        print_summary(&report, output, seed)?;
    }
    if args.lint {
        lint_output(output, &args)?;
    }
    Ok(Outcome::Success)
}

/// `--lint`: lints the output directory with every check at its default
/// threshold and prints the table (findings do not change the exit status
/// of the ingest, which succeeded).
fn lint_output(output: &Path, args: &IngestArgs) -> Result<()> {
    let options = gulp_lint::Options {
        open: super::directory_options(),
        ..gulp_lint::Options::default()
    };
    let bar = (!args.quiet).then(|| super::progress("frames linted"));
    let report = gulp_lint::lint(&[output], &options, &|n| {
        if let Some(bar) = &bar {
            bar.inc(n);
        }
    })
    .with_context(|| format!("cannot lint {}", output.display()))?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let Some(path) = &args.lint_json {
        report.write_json(path)?;
    }
    super::lint::print(&report)
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

fn json_items(list: &[gulp_ingest::SkippedItem]) -> Vec<JsonItem> {
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

/// The request of `gulp ingest <kind> ...`: the clap variant's paths in
/// the order of [`AdapterKind::inputs`], and the shared options. Also the
/// options only the command has, and the shuffle seed (drawn here when
/// `--shuffle` has none, so that the summary can print it).
fn request(kind: IngestKind) -> Result<(IngestRequest, IngestArgs, Option<u64>)> {
    let (kind, inputs, output, adapter, args) = adapter_inputs(kind)?;
    let shard = args
        .shard
        .as_deref()
        .map(|text| Shard::from_arg(text, args.shard_count.map(NonZeroUsize::get), &output))
        .transpose()?;
    if shard.is_some() && args.shuffle && args.seed.is_none() {
        anyhow::bail!(
            "--shuffle with --shard needs --seed: every task must shuffle the list the same way"
        );
    }
    let seed = args
        .shuffle
        .then(|| args.seed.unwrap_or_else(|| fastrand::u64(..)));
    let options = ingest_options(&args, seed, shard);
    let request = IngestRequest {
        kind,
        inputs,
        output,
        adapter,
        options,
    };
    request.check()?;
    Ok((request, args, seed))
}

/// The adapter, its inputs, the output directory and the shared options of
/// one `ingest` subcommand.
type AdapterInputs = (
    AdapterKind,
    Vec<PathBuf>,
    PathBuf,
    AdapterOptions,
    IngestArgs,
);

/// The [`AdapterInputs`] of `kind`.
fn adapter_inputs(kind: IngestKind) -> Result<AdapterInputs> {
    let mut adapter = AdapterOptions::default();
    let (kind, inputs, output, args) = match kind {
        IngestKind::TwentyBnJson {
            input_json,
            videos_dir,
            output_dir,
            label_name,
            opts,
        } => {
            adapter.label_name = label_name;
            let inputs = vec![input_json, videos_dir];
            (AdapterKind::TwentyBnJson, inputs, output_dir, opts)
        }
        IngestKind::TwentyBnCsvWebm {
            input_csv,
            videos_dir,
            output_dir,
            opts,
        } => {
            let inputs = vec![input_csv, videos_dir];
            (AdapterKind::TwentyBnCsvWebm, inputs, output_dir, opts)
        }
        IngestKind::TwentyBnCsvJpeg {
            input_csv,
            jpeg_dir,
            output_dir,
            opts,
        } => {
            let inputs = vec![input_csv, jpeg_dir];
            (AdapterKind::TwentyBnCsvJpeg, inputs, output_dir, opts)
        }
        IngestKind::VideoFolder {
            videos_dir,
            output_dir,
            opts,
        } => (AdapterKind::VideoFolder, vec![videos_dir], output_dir, opts),
        IngestKind::ImageFolder {
            images_dir,
            output_dir,
            opts,
        } => (AdapterKind::ImageFolder, vec![images_dir], output_dir, opts),
        IngestKind::ImageList {
            list_file,
            output_dir,
            root_path,
            opts,
        } => {
            let inputs = vec![list_file, root_path];
            (AdapterKind::ImageList, inputs, output_dir, opts)
        }
        IngestKind::Kinetics {
            input_csv,
            videos_dir,
            output_dir,
            opts,
        } => {
            let inputs = vec![input_csv, videos_dir];
            (AdapterKind::Kinetics, inputs, output_dir, opts)
        }
        IngestKind::Activitynet {
            input_json,
            videos_dir,
            output_dir,
            phase,
            opts,
        } => {
            adapter.phase = phase;
            let inputs = vec![input_json, videos_dir];
            (AdapterKind::Activitynet, inputs, output_dir, opts)
        }
        IngestKind::EpicKitchens {
            input_csv,
            videos_dir,
            output_dir,
            opts,
        } => {
            let inputs = vec![input_csv, videos_dir];
            (AdapterKind::EpicKitchens, inputs, output_dir, opts)
        }
        IngestKind::Manifest {
            manifest,
            output_dir,
            root,
            segments,
            column,
            clip_length,
            opts,
        } => {
            adapter.manifest = manifest_options(root, segments, &column, clip_length)?;
            (AdapterKind::Manifest, vec![manifest], output_dir, opts)
        }
    };
    Ok((kind, inputs, output, adapter, args))
}

/// `gulp ingest manifest`'s own options.
fn manifest_options(
    root: Option<PathBuf>,
    segments: bool,
    columns: &[String],
    clip_length: Option<f64>,
) -> Result<ManifestOptions> {
    let mut options = ManifestOptions {
        root,
        segments,
        clip_length,
        ..ManifestOptions::default()
    };
    for arg in columns {
        options.columns.set(arg)?;
    }
    Ok(options)
}

/// The pipeline's options from the command line.
fn ingest_options(args: &IngestArgs, seed: Option<u64>, shard: Option<Shard>) -> IngestOptions {
    IngestOptions {
        items_per_chunk: args.videos_per_chunk.get(),
        workers: super::threads(args.num_workers),
        frames: FrameOptions {
            short_edge: args.frame_size.map(NonZeroU32::get),
            max_size: args.max_size.map(NonZeroU32::get),
            quality: args.quality,
            frame_rate: args.frame_rate,
            subsampling: args.subsampling,
            decode_threads: args.decode_threads,
            audio: args.audio.then_some(AudioRequest {
                sample_rate: args.audio_rate,
                channels: args.audio_channels,
            }),
        },
        meta_format: args.meta_format.into(),
        strict: args.strict,
        shuffle_seed: seed,
        fsync: true,
        shard,
    }
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
