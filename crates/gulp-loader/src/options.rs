//! Everything a loader does, as one value: sampling, transforms, batches,
//! order, threads, labels and targets, the sampler and segments.

use gulp_codec::DecodeOptions;

use gulp_io::DirectoryOptions;

use crate::compose::Sampler;
use crate::error::{Error, Result};
use crate::media::{AudioOptions, DEFAULT_FPS};
use crate::order::Order;
use crate::ranks::Ranks;
use crate::sampling::Sampling;
use crate::segments::Segments;
use crate::targets::{OnMissing, Target};
use crate::transform::Spatial;

/// What to do with a clip whose frame fails to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Stop: the batch's error names the id, the frame and the byte offset.
    #[default]
    Raise,
    /// Leave the clip out of its batch (which is then smaller), count it and
    /// say why in [`crate::Batch::skipped`].
    Skip,
}

gulp_format::choice!(OnError, "on_error", { OnError::Raise => "raise", OnError::Skip => "skip" });

/// Where labels come from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Labels {
    /// The key of the item's meta (`meta_data[0]`) holding its label (of
    /// the segment first, for segments).
    pub key: String,
    /// Label → class index of string labels (of every target's string
    /// classes); `None` reads the directory's `label2idx.json` (if it has
    /// none, integer labels are used as they are, and an item whose label
    /// is a string is an error). A [`crate::Source::labels`] wins over it.
    pub index: Option<Vec<(String, i64)>>,
}

/// Everything a loader does.
#[derive(Debug, Clone, PartialEq)]
pub struct LoaderOptions {
    /// Frames per clip (`T`); 1 for images.
    pub frames: usize,
    /// How a clip's frames are chosen.
    pub sampling: Sampling,
    /// Distance between frames of a window (window and dense sampling).
    pub step: usize,
    /// Clips taken from each item (evaluation: evenly placed).
    pub clips: usize,
    /// Resize, crop and flip.
    pub spatial: Spatial,
    /// Clips per batch (`B`).
    pub batch_size: usize,
    /// Shuffle, seed, ranks.
    pub order: Order,
    /// Training: random clip positions, crops and flips. Otherwise clips
    /// are placed evenly and crops centred. `None`: training when the
    /// order is shuffled ([`LoaderOptions::is_training`]).
    pub train: Option<bool>,
    /// Decoding threads; `None` for the cores divided among the ranks of
    /// this node (see [`crate::default_threads`]).
    pub threads: Option<usize>,
    /// Ranks (processes with a loader) on this node, among which the cores
    /// are divided when `threads` is `None`; `None` asks the launcher
    /// ([`crate::Ranks::from_env`]).
    pub local_world_size: Option<usize>,
    /// Batches in flight per thread (decoded ahead of the consumer).
    pub prefetch: usize,
    /// A clip that fails to decode.
    pub on_error: OnError,
    /// Labels.
    pub labels: Labels,
    /// Codec, DCT and strictness of decoding (scale, crop and colour are the
    /// loader's).
    pub decode: DecodeOptions,
    /// How each source's samples are drawn: uniformly (or by per-item
    /// weights), or balanced over classes.
    pub sampler: Sampler,
    /// Samples per epoch, whatever the data's size (the sources' shares
    /// rounded to add up to it); `None`: as many as the sources give.
    pub samples_per_epoch: Option<usize>,
    /// What [`crate::Batch::targets`] holds.
    pub target: Target,
    /// A sample whose target (or segment) is missing or unusable.
    pub on_missing: OnMissing,
    /// Samples are the segments listed in each item's meta, not whole
    /// items.
    pub segments: Option<Segments>,
    /// One label index for every source (the first source's, then the new
    /// labels of the others numbered after), not one per source.
    pub shared_labels: bool,
    /// Sample clips in seconds: `frames` frames `1 / fps` seconds apart,
    /// each the frame on screen then, by the item's frame times
    /// (docs/loader.md, "Time, sound and text"); `None`: by frame index
    /// ([`Sampling`]).
    pub fps: Option<f64>,
    /// The rate of an item without frame times and without `fps` or
    /// `duration` in its meta, for clips in seconds and their times.
    pub default_fps: f64,
    /// Give each clip's sound ([`crate::Batch::audio`]).
    pub audio: Option<AudioOptions>,
    /// Give each clip's text: this key of its segment, else of its item's
    /// meta ([`crate::Batch::texts`]).
    pub texts: Option<String>,
    /// How the sources' directories are opened: for `s3://` ones, the node
    /// cache (by default the one `GULP_CACHE_DIR` names, if set). With a
    /// cache, the loader fetches the chunks the next batches need ahead of
    /// the decoding threads, and releases each after its last use.
    pub open: DirectoryOptions,
}

/// The defaults of every loader option: the one place they are written.
/// The command line, Python's signatures and the docs take them from here
/// (a test checks Python's against [`LoaderOptions::default`] and
/// [`LoaderOptions::images`]).
impl Default for LoaderOptions {
    fn default() -> LoaderOptions {
        LoaderOptions {
            frames: 8,
            sampling: Sampling::Segments,
            step: 1,
            clips: 1,
            spatial: Spatial {
                resize: Some(128),
                size: Some((112, 112)),
                crop: crate::CropMode::Random,
                flip: true,
            },
            batch_size: 8,
            order: Order::default(),
            train: None,
            threads: None,
            local_world_size: None,
            prefetch: 2,
            on_error: OnError::Raise,
            labels: Labels {
                key: "label".into(),
                index: None,
            },
            decode: DecodeOptions::default(),
            sampler: Sampler::Uniform,
            samples_per_epoch: None,
            target: Target::Label,
            on_missing: OnMissing::Raise,
            segments: None,
            shared_labels: false,
            fps: None,
            default_fps: DEFAULT_FPS,
            audio: None,
            texts: None,
            open: DirectoryOptions::default(),
        }
    }
}

impl LoaderOptions {
    /// The image loader's defaults (`gulp.ImageLoader`): one frame (the
    /// middle one of a video), torchvision's `RandomResizedCrop` to 224 ×
    /// 224 of the stored frame and a flip, batches of 64; the rest as
    /// [`LoaderOptions::default`].
    pub fn images() -> LoaderOptions {
        LoaderOptions {
            frames: 1,
            sampling: Sampling::Uniform,
            spatial: Spatial {
                resize: None,
                size: Some((224, 224)),
                crop: <crate::CropMode as gulp_format::Choice>::from_name("random_resized")
                    .unwrap_or(crate::CropMode::Random),
                flip: true,
            },
            batch_size: 64,
            ..LoaderOptions::default()
        }
    }

    /// Whether clips are drawn for training (random positions, crops and
    /// flips): `train`, else whether the order is shuffled.
    pub fn is_training(&self) -> bool {
        self.train.unwrap_or(self.order.shuffle.is_on())
    }

    /// Sets the ranks of the order and of the node ([`Ranks`]).
    pub fn with_ranks(mut self, ranks: &Ranks) -> LoaderOptions {
        self.order.rank = ranks.rank;
        self.order.world_size = ranks.world_size;
        self.local_world_size = Some(ranks.local_world_size);
        self
    }
}

/// Checks what can be checked before any data is read.
pub(crate) fn check_options(o: &LoaderOptions) -> Result<()> {
    let bad = |m: &str| Err(Error::Config(m.to_owned()));
    const ONE: &str = "at least 1";
    for (option, value) in [
        ("frames", o.frames),
        ("step", o.step),
        ("clips", o.clips),
        ("batch_size", o.batch_size),
    ] {
        if value == 0 {
            return Err(Error::option(option, value, ONE));
        }
    }
    if o.order.world_size == 0 || o.order.rank >= o.order.world_size {
        return Err(Error::Config(format!(
            "rank {} is not in 0..world_size ({})",
            o.order.rank, o.order.world_size
        )));
    }
    if o.spatial.resize == Some(0) {
        return Err(Error::option("resize", 0, "at least 1 pixel"));
    }
    if let Some((h, w)) = o.spatial.size {
        if h == 0 || w == 0 {
            return bad("size must be at least 1x1 pixel");
        }
    } else if o.spatial.crop != crate::CropMode::None {
        return bad("a crop needs a size");
    }
    if let Some(segments) = &o.segments {
        segments.check().map_err(Error::Config)?;
    }
    if let Target::MultiHot { classes: 0, .. } = o.target {
        return bad("a multi-hot target needs num_classes of at least 1");
    }
    if o.samples_per_epoch == Some(0) {
        return Err(Error::option("samples_per_epoch", 0, ONE));
    }
    if o.threads == Some(0) {
        return Err(Error::option(
            "threads",
            0,
            "at least 1 (or None for the node's cores per rank)",
        ));
    }
    if o.local_world_size == Some(0) {
        return Err(Error::option("local_world_size", 0, ONE));
    }
    let rate = |x: f64| x.is_finite() && x > 0.0;
    const RATE: &str = "a positive number";
    if let Some(fps) = o.fps.filter(|&f| !rate(f)) {
        return Err(Error::option("fps", fps, RATE));
    }
    if !rate(o.default_fps) {
        return Err(Error::option("default_fps", o.default_fps, RATE));
    }
    if o.fps.is_some() && matches!(o.sampling, Sampling::Frame(_)) {
        return bad("frame:K sampling picks a frame, not times: it takes no fps");
    }
    if let Some(a) = o.audio
        && !((1..=gulp_format::MAX_SAMPLE_RATE).contains(&a.sample_rate)
            && (1..=gulp_format::MAX_CHANNELS).contains(&a.channels))
    {
        return Err(Error::Config(format!(
            "audio of {} Hz and {} channels: the rate is 1 to {} Hz, the channels 1 to {}",
            a.sample_rate,
            a.channels,
            gulp_format::MAX_SAMPLE_RATE,
            gulp_format::MAX_CHANNELS
        )));
    }
    if o.order.shuffle.chunk_window() == Some(0) {
        return bad("a shuffle by chunks needs windows of at least 1 chunk");
    }
    if let crate::CropMode::RandomResized { scale, ratio } = o.spatial.crop {
        let ok = |(a, b): (f64, f64), lo: f64| a.is_finite() && b.is_finite() && lo < a && a <= b;
        if !ok(scale, 0.0) || scale.1 > 1.0 || !ok(ratio, 0.0) {
            return bad(
                "random_resized needs 0 < scale_min <= scale_max <= 1 and 0 < ratio_min <= ratio_max",
            );
        }
    }
    Ok(())
}
