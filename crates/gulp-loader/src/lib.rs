//! Training batches of video clips straight from a gulp directory.
//!
//! A [`Loader`] turns the items of a directory into batches of clips
//! (`[B, T, H, W, 3]` `uint8`), decoded on a pool of threads with
//! libjpeg-turbo's DCT scaling and region decoding so that no pixel is
//! decoded that the output does not need:
//!
//! - **sampling** ([`Sampling`]): which frames of an item make a clip
//!   (GulpIO's window, TSN's segments, uniform, dense), with several clips
//!   per item for evaluation;
//! - **spatial transforms** ([`Spatial`]): resize by the short edge, random,
//!   centre, random resized or three crops, horizontal flip; one draw per
//!   clip;
//! - **data** ([`Source`]): one directory or several, each with its share
//!   of an epoch ([`Amount`]: a weight, a repeat or a count) and a subset
//!   of its items (ids, or a filter on the meta); items, or the segments
//!   their meta lists ([`Segments`]), are the samples;
//! - **sampling of the epoch** ([`Sampler`]): every sample once, balanced
//!   over classes, or in proportion to per-item weights; an epoch of a
//!   fixed size (`samples_per_epoch`);
//! - **targets** ([`Target`]): a label, several keys, a multi-hot vector,
//!   a number or a computed value per sample, read once into one table;
//! - **order** ([`Order`]): a seeded shuffle per epoch, split between the
//!   ranks of a distributed job as PyTorch's `DistributedSampler` splits it;
//!   batches that depend only on the seed, the epoch and their number, so
//!   the thread count does not change them and a saved [`State`] resumes
//!   mid-epoch exactly.
//!
//! Beside the loader, what GulpIO v1's Python classes compute with:
//! [`resample`], Pillow's resize pixel for pixel (`gulp.transforms`), and
//! [`V1Window`], v1's clip window (`gulp.dataset`).
//!
//! ```no_run
//! # fn main() -> gulp_loader::Result<()> {
//! use gulp_loader::{CropMode, Loader, LoaderOptions, Sampling, Spatial};
//! let options = LoaderOptions {
//!     frames: 8,
//!     sampling: Sampling::Segments,
//!     spatial: Spatial { resize: Some(128), size: Some((112, 112)), crop: CropMode::Random, flip: true },
//!     batch_size: 8,
//!     ..LoaderOptions::default()
//! };
//! let mut loader = Loader::open("/data/jester-gulp", options)?;
//! for batch in loader.iter() {
//!     let batch = batch?;
//!     println!("{:?} {:?}", batch.shape, batch.labels);
//! }
//! # Ok(())
//! # }
//! ```
// On docs.rs, items behind a cargo feature say which (`--cfg docsrs`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_code)]

mod catalog;
mod column;
mod compose;
mod error;
mod fingerprint;
mod frames;
mod indexed;
mod loader;
mod media;
mod options;
mod order;
mod prefetch;
mod ranks;
mod resample;
mod rng;
mod sampling;
mod segments;
mod shuffle;
mod source;
mod targets;
mod transform;

pub use crate::column::{Compare, Predicate, WeightColumn};
pub use crate::compose::Sampler;
pub use crate::error::{Error, Result};
pub use crate::loader::{Batch, Batches, Loader, SkippedClip, State, default_threads};
pub use crate::media::{AudioOptions, DEFAULT_FPS};
pub use crate::options::{Labels, LoaderOptions, OnError};
pub use crate::order::{CHUNK_WINDOW, Order, Shuffle, Slot};
pub use crate::ranks::{GivenRanks, Launch, Launcher, RankSource, Ranks};
pub use crate::resample::{Filter, Sample, Shape, nearest_indices, resample};
pub use crate::rng::Rng;
pub use crate::sampling::{Placement, Sampling, V1Window, clip_indices};
pub use crate::segments::{Bounds, DURATION_KEY, FPS_KEY, Segments, Unit};
pub use crate::source::{Amount, ItemFilter, ItemFn, ItemWeights, Source, read_ids};
pub use crate::targets::{
    OnMissing, Target, TargetFn, TargetKeys, TargetKind, TargetValues, Targets,
};
pub use crate::transform::{
    CropMode, Geometry, RANDOM_RESIZED_RATIO, RANDOM_RESIZED_SCALE, Renderer, SizeForm, Spatial,
    parse_size, short_edge_rounded,
};
pub use gulp_format::Choice;
