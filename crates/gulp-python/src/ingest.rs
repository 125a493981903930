//! `gulp.ingest` (the CLI's built-in adapters through the Rust pipeline),
//! `gulp.check` and `gulp.recover`.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use gulp_ingest::manifest::ManifestOptions;
use gulp_ingest::video::AudioRequest;
use gulp_ingest::{
    AdapterOptions, FrameOptions, IngestOptions, IngestReport, IngestRequest, Shard,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{Class, ingest_err, io_err, os_err};
use crate::writer::meta_format;

pub(crate) fn report_dict<'py>(py: Python<'py>, r: &IngestReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("items", r.items)?;
    d.set_item("frames", r.frames)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("chunks", &r.chunks)?;
    let strings = |v: &[gulp_ingest::SkippedItem]| -> Vec<(String, String)> {
        v.iter()
            .map(|s| (s.id.clone(), s.error.to_string()))
            .collect()
    };
    d.set_item("skipped", strings(&r.skipped))?;
    d.set_item("warnings", strings(&r.warnings))?;
    d.set_item("already_present", r.already_present)?;
    d.set_item(
        "recovered",
        r.recovered
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
    )?;
    d.set_item("label_file", &r.label_file)?;
    d.set_item("seconds", r.elapsed.as_secs_f64())?;
    Ok(d)
}

/// Ingests a dataset with one of the CLI's built-in adapters (see `gulp
/// ingest --help`), with the GIL released; returns the run's report.
#[pyfunction]
#[pyo3(signature = (kind, inputs, output, *, videos_per_chunk = 100, num_workers = None,
                    frame_size = None, max_size = None, frame_rate = None, quality = 90,
                    subsampling = "auto",
                    meta_format = "json", shuffle_seed = None, strict = false,
                    label_name = "template", phase = "training", fsync = true, shard = None,
                    shard_count = None, root = None, segments = false, columns = None,
                    clip_length = None, audio = false, audio_rate = 16000, audio_channels = 1))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ingest<'py>(
    py: Python<'py>,
    kind: &str,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    videos_per_chunk: usize,
    num_workers: Option<NonZeroUsize>,
    frame_size: Option<u32>,
    max_size: Option<u32>,
    frame_rate: Option<f64>,
    quality: u8,
    subsampling: &str,
    meta_format: &str,
    shuffle_seed: Option<u64>,
    strict: bool,
    label_name: &str,
    phase: &str,
    fsync: bool,
    shard: Option<&str>,
    shard_count: Option<usize>,
    root: Option<PathBuf>,
    segments: bool,
    columns: Option<std::collections::BTreeMap<String, String>>,
    clip_length: Option<f64>,
    audio: bool,
    audio_rate: u32,
    audio_channels: u16,
) -> PyResult<Bound<'py, PyDict>> {
    let mut manifest = ManifestOptions {
        root,
        segments,
        clip_length,
        ..ManifestOptions::default()
    };
    for (role, column) in columns.unwrap_or_default() {
        manifest
            .columns
            .set(&format!("{role}={column}"))
            .map_err(ingest_err)?;
    }
    let options = IngestOptions {
        items_per_chunk: videos_per_chunk,
        workers: num_workers.map_or(IngestOptions::default().workers, NonZeroUsize::get),
        frames: FrameOptions {
            short_edge: frame_size.filter(|s| *s > 0),
            max_size: max_size.filter(|s| *s > 0),
            quality,
            frame_rate,
            subsampling: subsampling
                .parse()
                .map_err(|e: gulp_format::UnknownChoice| Class::Invalid.err(e.to_string()))?,
            audio: audio.then_some(AudioRequest {
                sample_rate: audio_rate,
                channels: audio_channels,
            }),
            ..FrameOptions::default()
        },
        meta_format: self::meta_format(meta_format)?,
        strict,
        shuffle_seed,
        fsync,
        shard: shard
            .map(|text| Shard::from_arg(text, shard_count, &output))
            .transpose()
            .map_err(ingest_err)?,
    };
    let request = IngestRequest {
        kind: kind.parse().map_err(ingest_err)?,
        inputs,
        output,
        adapter: AdapterOptions {
            label_name: label_name.to_owned(),
            phase: phase.to_owned(),
            manifest,
        },
        options,
    };
    request.check().map_err(ingest_err)?;
    let data = py.detach(|| request.dataset()).map_err(ingest_err)?;
    let report = py
        .detach(|| gulp_ingest::ingest(&data, &request.output, &request.options, &mut |_| {}))
        .map_err(ingest_err)?;
    report_dict(py, &report)
}

/// Checks a directory as `gulp check` does and returns the report as JSON
/// text (`gulp.check` wraps it).
#[pyfunction]
#[pyo3(signature = (path, decode = false, threads = None))]
pub(crate) fn check(
    py: Python<'_>,
    path: PathBuf,
    decode: bool,
    threads: Option<NonZeroUsize>,
) -> PyResult<String> {
    let threads = threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        NonZeroUsize::get,
    );
    let options = gulp_io::check::Options { decode, threads };
    let report = py
        .detach(|| gulp_io::check::check_directory(&path, options, &|_| {}))
        .map_err(|e| os_err("checking", &path, &e))?;
    serde_json::to_string(&report).map_err(|e| Class::Invalid.err(e.to_string()))
}

/// Where a sharded ingest into `path` is, as `gulp status --json` says it,
/// as JSON text (`gulp.status` wraps it).
#[pyfunction]
#[pyo3(signature = (path, shards = None))]
pub(crate) fn status(
    py: Python<'_>,
    path: PathBuf,
    shards: Option<NonZeroUsize>,
) -> PyResult<String> {
    let status = py
        .detach(|| gulp_ingest::shard::status(&path, shards.map(NonZeroUsize::get)))
        .map_err(ingest_err)?;
    serde_json::to_string(&status).map_err(|e| Class::Invalid.err(e.to_string()))
}

/// Moves the chunks of the shard directories `dirs` into `out` (as `gulp
/// merge`); what was done as JSON text (`gulp.merge` wraps it).
#[pyfunction]
pub(crate) fn merge(py: Python<'_>, out: PathBuf, dirs: Vec<PathBuf>) -> PyResult<String> {
    let report = py
        .detach(|| gulp_ingest::shard::merge(&out, &dirs))
        .map_err(ingest_err)?;
    serde_json::to_string(&report).map_err(|e| Class::Invalid.err(e.to_string()))
}

/// Clears what an interrupted write left (as `gulp recover`); returns what
/// was done, one message per file.
#[pyfunction]
pub(crate) fn recover<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let done = py.detach(|| gulp_io::recover(&path)).map_err(io_err)?;
    PyList::new(py, done.iter().map(ToString::to_string))
}

/// Copies the gulp directory `src` to `dst` (as `gulp copy`), with one
/// line per file on stderr when `progress`; what was done as a dict
/// (`gulp.copy` returns it).
#[pyfunction]
#[pyo3(signature = (src, dst, progress = false))]
pub(crate) fn copy<'py>(
    py: Python<'py>,
    src: PathBuf,
    dst: PathBuf,
    progress: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let report = py
        .detach(|| {
            gulp_io::copy_dir(&src, &dst, &mut |step| {
                if progress {
                    eprintln!(
                        "gulp copy: [{}/{}] {} ({} B)",
                        step.done, step.total, step.name, step.bytes
                    );
                }
            })
        })
        .map_err(io_err)?;
    let out = PyDict::new(py);
    out.set_item("copied", report.copied)?;
    out.set_item("copied_bytes", report.copied_bytes)?;
    out.set_item("skipped", report.skipped)?;
    out.set_item("unverified", report.unverified)?;
    out.set_item("left_out", report.left_out)?;
    Ok(out)
}

/// Registers the ffmpeg that video ingest runs when neither `GULP_FFMPEG`
/// nor `ffmpeg` on the PATH is there (`gulp._ffmpeg` gives the static
/// build of the optional imageio-ffmpeg package).
#[pyfunction]
#[pyo3(signature = (path))]
pub(crate) fn set_bundled_ffmpeg(path: Option<PathBuf>) {
    gulp_ingest::ffmpeg::set_bundled(path);
}

/// The ffmpeg that video ingest runs (`GULP_FFMPEG`, `ffmpeg` on the PATH,
/// then the bundled one), checked to be new enough; an `IngestError` that
/// says how to get one otherwise.
#[pyfunction]
pub(crate) fn ffmpeg_path(py: Python<'_>) -> PyResult<std::ffi::OsString> {
    py.detach(gulp_ingest::ffmpeg::binary)
        .map(PathBuf::into_os_string)
        .map_err(|e| Class::Ingest.err(e))
}
