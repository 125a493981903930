//! `gulp.ingest` (the CLI's built-in adapters through the Rust pipeline),
//! `gulp.check` and `gulp.recover`.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use gulp_ingest::adapters::Dataset;
use gulp_ingest::{FrameOptions, IngestOptions, IngestReport, Subsampling};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{Class, ingest_err, io_err, os_err};
use crate::writer::meta_format;

/// The built-in adapter `kind` over `inputs`.
fn dataset(
    kind: &str,
    inputs: &[PathBuf],
    output: &Path,
    label_name: &str,
    phase: &str,
) -> PyResult<Dataset> {
    let want = |n: usize, names: &str| -> PyResult<()> {
        if inputs.len() == n {
            Ok(())
        } else {
            Err(Class::Invalid.err(format!(
                "adapter {kind:?} takes {n} input path(s) ({names}), not {}",
                inputs.len()
            )))
        }
    };
    let r = match kind {
        "20bn-json" => {
            want(2, "input_json, videos_dir")?;
            Dataset::twenty_bn_json(&inputs[0], &inputs[1], output, label_name)
        }
        "20bn-csv-webm" => {
            want(2, "input_csv, videos_dir")?;
            Dataset::twenty_bn_csv_webm(&inputs[0], &inputs[1], output)
        }
        "20bn-csv-jpeg" => {
            want(2, "input_csv, jpeg_dir")?;
            Dataset::twenty_bn_csv_jpeg(&inputs[0], &inputs[1], output)
        }
        "video-folder" => {
            want(1, "videos_dir")?;
            Dataset::video_folder(&inputs[0], output)
        }
        "image-folder" => {
            want(1, "images_dir")?;
            Dataset::image_folder(&inputs[0], output)
        }
        "image-list" => {
            want(2, "list_file, root_dir")?;
            Dataset::image_list(&inputs[0], &inputs[1], output)
        }
        "kinetics" => {
            want(2, "input_csv, videos_dir")?;
            Dataset::kinetics(&inputs[0], &inputs[1], output)
        }
        "activitynet" => {
            want(2, "input_json, videos_dir")?;
            Dataset::activitynet(&inputs[0], &inputs[1], phase)
        }
        _ => {
            return Err(Class::Invalid.err(format!(
                "unknown adapter {kind:?}: one of '20bn-json', '20bn-csv-webm', \
                 '20bn-csv-jpeg', 'video-folder', 'image-folder', 'image-list', \
                 'kinetics', 'activitynet'"
            )));
        }
    };
    r.map_err(ingest_err)
}

fn report_dict<'py>(py: Python<'py>, r: &IngestReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("items", r.items)?;
    d.set_item("frames", r.frames)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("chunks", &r.chunks)?;
    let strings = |v: &[gulp_ingest::Skipped]| -> Vec<(String, String)> {
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
                    frame_size = None, frame_rate = None, quality = 90, subsampling = "auto",
                    meta_format = "json", shuffle_seed = None, strict = false,
                    label_name = "template", phase = "training", fsync = true, shard = None,
                    shard_count = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ingest<'py>(
    py: Python<'py>,
    kind: &str,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    videos_per_chunk: usize,
    num_workers: Option<NonZeroUsize>,
    frame_size: Option<u32>,
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
) -> PyResult<Bound<'py, PyDict>> {
    let shard = match shard {
        None => None,
        Some("auto") => Some(gulp_ingest::Shard::from_env(
            |k| std::env::var(k).ok(),
            shard_count,
        )),
        Some(text) => Some(gulp_ingest::Shard::parse(text)),
    }
    .transpose()
    .map_err(|e| Class::Invalid.err(format!("shard: {e}")))?;
    if videos_per_chunk == 0 {
        return Err(Class::Invalid.err("videos_per_chunk must be at least 1"));
    }
    if let Some(rate) = frame_rate
        && !(rate.is_finite() && rate > 0.0)
    {
        return Err(Class::Invalid.err(format!("frame_rate must be a positive number, not {rate}")));
    }
    let subsampling = match subsampling {
        "auto" => Subsampling::Auto,
        "444" | "4:4:4" => Subsampling::S444,
        "420" | "4:2:0" => Subsampling::S420,
        s => {
            return Err(Class::Invalid.err(format!(
                "subsampling must be 'auto', '444' or '420', not {s:?}"
            )));
        }
    };
    let mut opts = IngestOptions {
        items_per_chunk: videos_per_chunk,
        frames: FrameOptions {
            short_edge: frame_size.filter(|s| *s > 0),
            quality,
            frame_rate,
            subsampling,
            ..FrameOptions::default()
        },
        meta_format: self::meta_format(meta_format)?,
        strict,
        shuffle_seed,
        fsync,
        shard,
        ..IngestOptions::default()
    };
    if let Some(n) = num_workers {
        opts.workers = n.get();
    }
    let data = py.detach(|| dataset(kind, &inputs, &output, label_name, phase))?;
    let report = py
        .detach(|| gulp_ingest::ingest(&data, &output, &opts, &mut |_| {}))
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

/// Clears what an interrupted write left (as `gulp recover`); returns what
/// was done, one message per file.
#[pyfunction]
pub(crate) fn recover<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let done = py.detach(|| gulp_io::recover(&path)).map_err(io_err)?;
    PyList::new(py, done.iter().map(ToString::to_string))
}
