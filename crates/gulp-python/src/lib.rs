//! `gulp._gulp`: the native half of the `gulp` Python package.
//!
//! The Python modules (`gulp.fileio`, `gulp.utils`, ...) give gulpio2's API;
//! they call the classes and functions here, which read, decode, encode and
//! write with the Rust crates. Every call that touches files or pixels
//! releases the GIL. Errors become the exception classes of `gulp.errors`,
//! with the Rust message (path, id, byte offset) as their text.
// PyO3's macros expand to items without docs and to unsafe FFI glue; the
// hand-written unsafe code is in `views.rs`, with its reasoning.
#![allow(missing_docs)]

mod codec;
mod convert;
mod directory;
mod directory_writer;
mod errors;
mod gulpio1;
mod ingest;
mod lint;
mod loader;
mod pixel_pool;
mod views;
mod writer;

use std::path::PathBuf;

use pyo3::prelude::*;

/// The module.
#[pymodule]
fn _gulp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "CODEC",
        if cfg!(feature = "turbojpeg") {
            "libjpeg-turbo"
        } else {
            "zune-jpeg"
        },
    )?;
    m.add("INDEX_FILE", gulp_io::gulp_format::INDEX_FILE)?;
    m.add_class::<directory::Directory>()?;
    m.add_class::<writer::Writer>()?;
    m.add_class::<directory_writer::DirectoryWriter>()?;
    m.add_class::<loader::Loader>()?;
    m.add_class::<loader::BatchIter>()?;
    m.add_function(wrap_pyfunction!(codec::encode_jpeg, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decode_jpeg, m)?)?;
    m.add_function(wrap_pyfunction!(codec::jpeg_header, m)?)?;
    m.add_function(wrap_pyfunction!(codec::resize, m)?)?;
    m.add_function(wrap_pyfunction!(codec::decode_image, m)?)?;
    m.add_function(wrap_pyfunction!(gulpio1::resample, m)?)?;
    m.add_function(wrap_pyfunction!(gulpio1::nearest_indices, m)?)?;
    m.add_function(wrap_pyfunction!(gulpio1::window_starts, m)?)?;
    m.add_function(wrap_pyfunction!(gulpio1::window, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::ingest, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::check, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::recover, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::status, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::merge, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::copy, m)?)?;
    m.add_function(wrap_pyfunction!(lint::lint, m)?)?;
    m.add_function(wrap_pyfunction!(directory::read_labels, m)?)?;
    m.add_function(wrap_pyfunction!(loader::read_ids, m)?)?;
    m.add_function(wrap_pyfunction!(loader::loader_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(loader::option_names, m)?)?;
    m.add_function(wrap_pyfunction!(loader::launcher_env, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::set_bundled_ffmpeg, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::ffmpeg_path, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(is_remote, m)?)?;
    Ok(())
}

/// Whether `path` spells a location on the network (`s3://`, `https://`,
/// `http://`): gulp_store's one rule, for the Python side's file tests.
#[pyfunction]
fn is_remote(path: PathBuf) -> bool {
    gulp_store::is_remote(&path)
}

/// Runs the `gulp` command line with `argv` (program name first) and
/// returns its exit status.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| gulp_cli::status(argv))
}
