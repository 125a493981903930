//! Turn video and image datasets into gulp directories.
//!
//! A [`DatasetAdapter`] lists a dataset's items (id, `meta_data`, and where
//! the frames come from: JPEG bytes, pixels, image files or a video); the
//! [`ingest`] pipeline decodes videos with ffmpeg, resizes by the short edge,
//! encodes JPEGs on worker threads, and writes chunks in input order with
//! [`gulp_io::ChunkWriter`], so every chunk is committed atomically and the
//! output does not depend on the number of workers. Built-in adapters cover
//! every input layout of gulpio2's scripts ([`adapters`]). A program that
//! holds its frames (pixels or JPEG bytes) pushes them into a [`Writer`]
//! instead, which writes through the same lock, encoder and chunk commits.
//!
//! # Example
//!
//! ```
//! use gulp_ingest::{adapters::Dataset, ingest, IngestOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let input = tempfile::tempdir()?;
//! # let output = tempfile::tempdir()?;
//! # let jpeg = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../gulp-io/tests/data/white-8x8.jpg"))?;
//! # std::fs::create_dir(input.path().join("cat"))?;
//! # std::fs::write(input.path().join("cat/a.jpg"), &jpeg)?;
//! // images/<label>/<file>, as gulpio2's image-folder script expects.
//! let adapter = Dataset::image_folder(input.path(), output.path())?;
//! let report = ingest(&adapter, output.path(), &IngestOptions::default(), &mut |_| {})?;
//! assert_eq!(report.items, 1);
//! let gulp = gulp_io::GulpDirectory::open(output.path())?;
//! assert!(gulp.contains("cat-a.jpg"));
//! # Ok(())
//! # }
//! ```
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod adapters;
pub mod cut;
mod dataset;
mod error;
pub mod ffmpeg;
pub mod frames;
pub mod manifest;
mod pipeline;
mod raster;
mod request;
pub mod shard;
mod staging;
pub mod video;
mod writer;
pub mod yuv;

pub use crate::dataset::{DatasetAdapter, FrameSource, Item, Pixels};
pub use crate::error::{Error, ItemError, Result, SkippedItem};
pub use crate::frames::{FrameOptions, SubsamplingChoice};
pub use crate::pipeline::{IngestOptions, IngestReport, Progress, ingest};
pub use crate::request::{AdapterKind, AdapterOptions, IngestRequest};
pub use crate::shard::{PLAN_FILE, Plan, Shard, finished_tasks, is_bookkeeping};
pub use crate::writer::{Frames, OnExists, Writer, WriterBuilder};
