//! The adapter trait: how a dataset presents its items to the pipeline.

use std::path::PathBuf;

use gulp_format::Value;

use crate::cut::Span;
use crate::error::ItemError;
use gulp_io::LabelIndex;

/// Decoded pixels, row-major with interleaved channels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pixels {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// 1 (gray) or 3 (RGB).
    pub channels: u8,
    /// `height * width * channels` bytes.
    pub data: Vec<u8>,
}

impl Pixels {
    /// Checks that the buffer matches the dimensions.
    pub fn check(&self) -> Result<(), String> {
        if self.channels != 1 && self.channels != 3 {
            return Err(format!(
                "{} channels; frames must have 1 (gray) or 3 (RGB)",
                self.channels
            ));
        }
        let want = u64::from(self.width) * u64::from(self.height) * u64::from(self.channels);
        if self.width == 0 || self.height == 0 || want != self.data.len() as u64 {
            return Err(format!(
                "{}x{}x{} frame with {} bytes of pixels",
                self.width,
                self.height,
                self.channels,
                self.data.len()
            ));
        }
        Ok(())
    }
}

/// Where an item's frames come from.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameSource {
    /// Frames that are already JPEG-encoded. Stored byte for byte unless a
    /// resize is asked for.
    Jpeg(Vec<Vec<u8>>),
    /// Decoded frames, encoded to JPEG at the configured quality.
    Pixels(Vec<Pixels>),
    /// Image files (JPEG, PNG, BMP, GIF, TIFF, WebP), one frame each, in this
    /// order. JPEG files that need no resize are stored byte for byte.
    ImageFiles(Vec<PathBuf>),
    /// A video file, decoded by ffmpeg.
    Video(PathBuf),
    /// A span of a video file, cut by presentation time
    /// ([`crate::cut`]): the consecutive items of one source
    /// ([`DatasetAdapter::source`]) are cut from one decode of it.
    Clip {
        /// The video.
        path: PathBuf,
        /// The span, in seconds of the video.
        span: Span,
    },
}

/// One item as an adapter describes it: its `meta_data` and where its frames
/// come from. Describing is cheap; the pipeline's workers do the decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The `meta_data` entry stored with the item.
    pub meta: Value,
    /// The frames.
    pub frames: FrameSource,
}

/// A dataset as a list of items, GulpIO's "hackable" adapter.
///
/// `id` and `item` are called from several worker threads at once; `len` and
/// `id` must be cheap, `item` may touch the file system (e.g. list a folder of
/// frames) but leaves decoding to the pipeline.
///
/// ```
/// use gulp_ingest::{DatasetAdapter, FrameSource, Item, ItemError};
/// use gulp_format::Value;
///
/// /// Three one-frame items from JPEG bytes held in memory.
/// struct InMemory(Vec<(String, Vec<u8>)>);
///
/// impl DatasetAdapter for InMemory {
///     fn len(&self) -> usize {
///         self.0.len()
///     }
///     fn id(&self, index: usize) -> String {
///         self.0[index].0.clone()
///     }
///     fn item(&self, index: usize) -> Result<Item, ItemError> {
///         Ok(Item {
///             meta: [("index", Value::from(index as i64))].into_iter().collect(),
///             frames: FrameSource::Jpeg(vec![self.0[index].1.clone()]),
///         })
///     }
/// }
/// ```
pub trait DatasetAdapter: Send + Sync {
    /// The number of items.
    fn len(&self) -> usize;

    /// Whether there are no items.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of item `index` (`0..len()`).
    fn id(&self, index: usize) -> String;

    /// Describes item `index`: its meta and its frame source.
    fn item(&self, index: usize) -> Result<Item, ItemError>;

    /// The label index to write as `label2idx.json`, for adapters with labels.
    fn labels(&self) -> Option<&LabelIndex> {
        None
    }

    /// A frame rate that the adapter's videos are sampled at unless the run's
    /// options set one (the 20BN adapters use 8, as gulpio2's scripts).
    fn default_frame_rate(&self) -> Option<f64> {
        None
    }

    /// The source item `index` is cut from, for adapters whose items are
    /// clips of longer videos ([`FrameSource::Clip`]): consecutive items of
    /// one source go to one worker together, and are cut from one decode.
    /// `None` (the default): the item stands alone.
    fn source(&self, index: usize) -> Option<u64> {
        let _ = index;
        None
    }

    /// Where item `index` is in the adapter's input, for reports (a
    /// manifest's `row 12`); `None`: its position (`input #N`) says it.
    fn origin(&self, index: usize) -> Option<String> {
        let _ = index;
        None
    }
}

impl<A: DatasetAdapter + ?Sized> DatasetAdapter for Box<A> {
    fn len(&self) -> usize {
        (**self).len()
    }
    fn id(&self, index: usize) -> String {
        (**self).id(index)
    }
    fn item(&self, index: usize) -> Result<Item, ItemError> {
        (**self).item(index)
    }
    fn labels(&self) -> Option<&LabelIndex> {
        (**self).labels()
    }
    fn default_frame_rate(&self) -> Option<f64> {
        (**self).default_frame_rate()
    }
    fn source(&self, index: usize) -> Option<u64> {
        (**self).source(index)
    }
    fn origin(&self, index: usize) -> Option<String> {
        (**self).origin(index)
    }
}
