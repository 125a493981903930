//! Read and write gulp directories.
//!
//! A training program opens a [`GulpDirectory`] and reads an item's frames by
//! id, as JPEG bytes straight from a memory map or decoded to pixels; an
//! ingest writes chunks with a [`ChunkWriter`], which makes a chunk visible
//! only once its data and meta are complete and synced. Directories written by
//! GulpIO and gulpio2 read as they are, and what this crate writes with JSON
//! meta reads in gulpio2.
//!
//! # Example
//!
//! ```
//! use gulp_codec::ColorMode;
//! use gulp_io::{ChunkWriter, GulpDirectory, Selection};
//! use gulp_format::Value;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let jpeg = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/white-8x8.jpg"))?;
//! // Write one chunk holding one item of three frames.
//! let mut writer = ChunkWriter::builder().create(dir.path(), 0)?;
//! writer.append("clip-1", Value::from("a label"), [&jpeg, &jpeg, &jpeg])?;
//! let summary = writer.finish()?;
//! assert_eq!(summary.frames, 3);
//!
//! // Read it back: raw JPEG bytes (zero copy) or decoded pixels.
//! let gulp = GulpDirectory::open(dir.path())?;
//! let reader = gulp.reader_for("clip-1")?;
//! let frames = reader.frames("clip-1", &Selection::parse("::2")?)?;
//! assert_eq!(frames.len(), 2);
//! assert_eq!(&*frames[0], &jpeg[..]);
//! let image = gulp_codec::decode_jpeg(&frames[0], ColorMode::Auto)?;
//! assert_eq!((image.height, image.width, image.channels), (8, 8, 3));
//! # Ok(())
//! # }
//! ```
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]

pub mod audio;
pub mod check;
mod copy;
mod directory;
mod error;
mod index_policy;
mod labels;
mod mmap;
mod reader;
mod recover;
mod select;
mod writer;

pub use crate::copy::{CopyAction, CopyReport, CopyStep, copy_dir};
pub use crate::directory::{ChunkEntry, DirectoryOptions, DirectoryWarning, GulpDirectory};
pub use crate::error::{AUDIO_RECORD, Error, ErrorKind, Result};
pub use crate::index_policy::{AUTO_ITEMS, IndexPolicy, IndexState, LABEL_KEY};
pub use crate::labels::{LABEL_FILE, LabelIndex};
pub use crate::reader::{ChunkReader, ReadMode};
pub use crate::recover::{Recovery, recover, recover_chunks};
pub use crate::select::Selection;
pub use crate::writer::{
    AudioInput, ChunkSummary, ChunkWriter, ChunkWriterBuilder, ItemMedia, Pcm,
};
pub use gulp_codec;
pub use gulp_format;
pub use gulp_store;
