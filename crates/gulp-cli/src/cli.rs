//! The command line: every subcommand, its arguments and its `--help` text.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use gulp_codec::{Codec, Dct, Scale};
use gulp_format::Choice;
use gulp_loader::{CropMode, LoaderOptions, Sampling, Shuffle};

/// gulp: storage for deep learning on videos, compatible with GulpIO.
///
/// A gulp directory holds chunk pairs `data_N.gulp` (JPEG records) and
/// `meta_N.gmeta` (GulpIO's JSON meta or gulp's msgpack meta).
///
/// Exit status: 0 on success, 1 when `gulp check` or `gulp lint` finds
/// problems or `gulp status` finds chunks missing, 2 on an error (bad
/// arguments, unreadable input).
#[derive(Debug, Parser)]
#[command(name = "gulp", version, propagate_version = true)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// The node cache of remote directories.
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The node cache of `s3://` directories (docs/object-storage.md): what is
/// read of each object (whole, or the ranges read) is fetched once per node
/// into a directory that every process on the node shares.
#[derive(Debug, Args)]
pub(crate) struct CacheArgs {
    /// Cache the objects of s3:// directories in DIR (default: $GULP_CACHE_DIR; none if unset).
    #[arg(long, global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Keep at most SIZE bytes in the cache, evicting the least recently used (500G, 20GiB,
    /// bytes; default: $GULP_CACHE_LIMIT, else no limit).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_bytes)]
    pub cache_limit: Option<u64>,
    /// What the cache fetches of data objects: auto (the ranges read; whole chunks read again
    /// when the cache holds the directory), chunks (whole), ranges (default: $GULP_CACHE_FETCH,
    /// else auto).
    #[arg(long, global = true, value_name = "POLICY", value_parser = ChoiceParser::<gulp_store::CacheFetch>::new())]
    pub cache_fetch: Option<gulp_store::CacheFetch>,
    /// Read s3:// directories without the cache, whatever $GULP_CACHE_DIR says.
    #[arg(long, global = true, conflicts_with_all = ["cache_dir", "cache_limit", "cache_fetch"])]
    pub no_cache: bool,
}

fn parse_bytes(text: &str) -> Result<u64, String> {
    gulp_store::parse_byte_size(text)
        .ok_or_else(|| format!("{text:?} is not a size (e.g. 500G, 20GiB, 1048576)"))
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Gulp a dataset: decode, resize and encode its frames into chunks.
    ///
    /// One subcommand per input layout (those of gulpio2's scripts). Videos
    /// are decoded with ffmpeg; JPEG frames that need no resize are stored as
    /// they are. Each chunk becomes visible only when complete. Items that
    /// fail (broken video, bad image, missing file, no frames) are skipped and
    /// listed at the end, or stop the run with `--strict`. Ingesting into a
    /// directory that has chunks adds new chunks after them and skips ids
    /// already there, so re-running an interrupted ingest completes it.
    #[command(
        subcommand,
        after_help = "Example: gulp ingest 20bn-json train.json videos/ gulped/train --frame-size 256"
    )]
    Ingest(IngestKind),
    /// Check a gulp directory for every kind of damage.
    ///
    /// Runs gulpio2's four sanity checks (empty meta files, empty data files,
    /// data file size against the meta, duplicate ids) without their false
    /// alarms, and checks every record: inside the data file, no overlap,
    /// length a multiple of 4, zero pad bytes, JPEG start (FFD8) and end
    /// (FFD9) markers, and the msgpack per-frame checksums. Also reports
    /// unreadable meta files, orphan and temporary files, and ids present in
    /// more than one chunk. Each problem names the file, the id, the frame
    /// index and the byte offset. Checking goes on after a problem, so all of
    /// them are listed.
    ///
    /// Leftovers of an interrupted write (temporary files, a commit cut
    /// between its two renames) are listed as notes, not problems: nothing
    /// committed is damaged, and `gulp recover` clears them.
    ///
    /// Exit status: 0 if the directory is clean (notes allowed), 1 if any
    /// problem was found, 2 if the directory cannot be read at all.
    #[command(after_help = "Example: gulp check data/train --decode")]
    Check(CheckArgs),
    /// Find what is wrong with the data before training on it.
    ///
    /// Reads every item of each DIR (local or s3://) on all cores, decoding
    /// frames at the least DCT scale that serves the checks (1/8 for frames
    /// of 256 pixels and more), and reports: exact duplicates (same stored
    /// bytes, whole items or frames), near duplicates (perceptual hash:
    /// re-encoded, resized, slightly cropped copies), leaks (a duplicate
    /// across two DIRs), dark, light, blank, low-information and blurry
    /// frames, frozen runs, short items, odd frame sizes and aspect ratios
    /// (against each directory's median) and labels (small classes, labels
    /// missing from label2idx.json, items without the label key). Each
    /// check has a threshold flag below; docs/lint.md explains them.
    ///
    /// Exit status: 0 if nothing was found, 1 if there are findings, 2 on an
    /// error.
    #[command(
        after_help = "Example: gulp lint data/val data/train --json lint.json --ids-out val.ids --ids-out train.ids --drop blank,short"
    )]
    Lint(LintArgs),
    /// Clear what an interrupted write left behind.
    ///
    /// Does what the next ingest would do first: finishes a commit that was
    /// cut between its two renames (the data file in place, its complete
    /// meta still under the temporary name), and removes the temporary files
    /// of writes that never reached their commit. Nothing committed is
    /// touched. Afterwards gulpio2 opens the directory again, without
    /// re-running the ingest. Refused while an ingest is writing into the
    /// directory.
    #[command(after_help = "Example: gulp recover data/train")]
    Recover(RecoverArgs),
    /// Copy a gulp directory: a local folder to a bucket, a bucket to a
    /// local folder, or one to another of its kind.
    ///
    /// SRC and DST are local paths or s3://bucket/prefix. Each chunk's data
    /// file is copied before its meta file, so that a reader of DST never
    /// finds a meta whose data is missing; label2idx.json and the index file
    /// come last; temporary and lock files are left out. Each file copied is
    /// checked against its source (its MD5, as S3's entity tags are), and a
    /// local file appears only once complete. A file already in DST with the
    /// same size and checksum is skipped: a copy that was stopped is run
    /// again to finish it. DST holding chunks that SRC has not is refused.
    /// Progress goes to stderr, one line per file.
    #[command(after_help = "Example: gulp copy data/train s3://bucket/datasets/train")]
    Copy(CopyArgs),
    /// Look at an item's frames: a contact sheet (PNG) or an animation (GIF).
    ///
    /// Each selected frame is decoded and resized by its short edge to
    /// `--tile` pixels. The sheet has 8 tiles per row, each frame's index
    /// under its tile, and the id and label (the `label` or `template` of
    /// its meta_data) on top. The GIF plays the tiles at 8 frames per
    /// second, in a loop.
    #[command(
        after_help = "Example: gulp preview data/train --id 702766 --select ::4 --out sheet.png"
    )]
    Preview(PreviewArgs),
    /// Print the meta as JSON, in gulpio2's structure.
    ///
    /// Prints `{id: {"frame_info": [[loc, pad, length], ...], "meta_data":
    /// [...]}}` for every item, chunks in numeric order, whatever the meta
    /// format on disk, with the bytes Python's `json.dump` writes (so
    /// `gulp dump-meta DIR --chunk N` reproduces a gulpio2 meta file
    /// exactly); an item with frame times or sound has its `frame_times` and
    /// `audio` too, as its JSON meta does (docs/format.md §8).
    /// No newline is added unless stdout is a terminal.
    #[command(after_help = "Example: gulp dump-meta data/train --id 702766 --no-frame-info")]
    DumpMeta(DumpMetaArgs),
    /// Summarise a gulp directory: chunks, items, frames, bytes, formats.
    ///
    /// Also gives the JPEG frame sizes (min, median, max), the labels of
    /// `label2idx.json` if there is one, and warnings about orphan or
    /// temporary files; from the metas, the items with sound (their sample
    /// rates, channels and seconds in all), those ingested with `--audio`
    /// whose video had none, and the items with frame times. A directory
    /// read from its index file is summarised without parsing a meta, so
    /// sound and frame times are not counted then (`null` in `--json`).
    #[command(after_help = "Example: gulp info data/train --json")]
    Info(InfoArgs),
    /// Write (or refresh) a directory's index file, `gulp_index.bin`.
    ///
    /// The index file holds every item's id, frame records and label in
    /// columns that every process of a node maps and shares: a directory
    /// with one opens in a time and memory that do not grow with its items
    /// (a loader of ten million items starts in seconds and holds nothing
    /// per item). Opening a directory of 100,000 items or more writes one
    /// by itself (`GULP_INDEX=auto`; `always` for any size, `read` to use
    /// one but never write it, `off` for none), and ingest, convert and
    /// merge rewrite it after changing such a directory; this command
    /// writes it now, whatever the size. One that no
    /// longer matches its chunks' files (sizes, modification times) or is
    /// damaged is never used, and is rewritten. gulpio2 ignores the file;
    /// `gulp check` compares it with the meta files.
    #[command(after_help = "Example: gulp index data/train")]
    Index(IndexArgs),
    /// Rewrite every chunk's meta in another format.
    ///
    /// Each meta file is replaced atomically (written under a temporary name,
    /// synced, renamed, directory synced). Chunks already in the target
    /// format are left alone. Converting to msgpack adds a CRC-32 per frame,
    /// read from the data file; converting back to JSON gives exactly the
    /// bytes gulpio2 wrote.
    #[command(after_help = "Example: gulp convert data/train --to msgpack")]
    Convert(ConvertArgs),
    /// Write an item's frames (and its sound) to files.
    ///
    /// Frames go to `OUT/<id>/<index>.jpg`, the index being the frame's
    /// position in the item with five digits (`00000.jpg`), as the stored
    /// JPEG bytes; with `--decode png` they are decoded and written as
    /// `<index>.png`. With `--audio`, an item's sound (gulp ingest --audio)
    /// goes beside them as `OUT/<id>/audio.wav`; the line printed per item
    /// gives its rate, channels, length and the source time of its first
    /// sample (to line it up with the frames). Characters of the id that
    /// cannot be in a file name (`/`, `\`, NUL, `%`) are written as `%XX`,
    /// and `.`/`..`/empty ids are escaped whole.
    #[command(
        after_help = "Example: gulp extract data/train --id 702766 --select ::2 --out frames/ --audio"
    )]
    Extract(ExtractArgs),
    /// Measure read (and decode) speed over every frame.
    ///
    /// Reads every frame of every chunk and decodes it (unless `--raw`), then
    /// prints frames/s, megapixels/s (decoded pixels) and MB/s (JPEG bytes).
    #[command(after_help = "Example: gulp bench data/train --threads 8")]
    Bench(BenchArgs),
    /// Move the chunks of shard directories into one directory.
    ///
    /// For shards written to separate directories (`gulp ingest ... --shard
    /// I/N` on node-local disks): every chunk pair of each DIR is moved into
    /// OUT (created if missing), data first and meta last, so that OUT never
    /// shows a half-moved chunk and a merge that was cut is finished by
    /// running it again. Everything is checked before anything moves: a
    /// chunk number or an id in two places, labels numbered differently, or
    /// an unfinished write refuse the merge (exit 2, nothing moved).
    #[command(after_help = "Example: gulp merge data/train /scratch/node*/train")]
    Merge(MergeArgs),
    /// Where a sharded ingest is: which chunks are committed, which task
    /// owns the missing ones, and which tasks to run again.
    ///
    /// Exit status 0 when no sharded run is under way (all tasks finished),
    /// 1 while chunks are missing.
    #[command(after_help = "Example: gulp status data/train --shards 64")]
    Status(StatusArgs),
    /// Look at gulp directories in the browser: a read-only gallery.
    ///
    /// An overview (items, frames, classes, frame sizes, chunk sizes, the
    /// `gulp check` state and a lint report), a grid of thumbnails (paged,
    /// filtered by class, id prefix or meta key, sorted; every view a URL),
    /// a page per item (film strip, player, meta, frame sizes, the same id
    /// in the other directories served) and "what the model sees": a batch
    /// of the clip loader configured in the page, with each clip's crop
    /// drawn on its source frames. Pages come from each directory's index:
    /// metas are read in the background, never all before a page.
    ///
    /// Serves on 127.0.0.1 unless --host says otherwise. Nothing outside the
    /// directories given can be read through it.
    #[cfg(feature = "serve")]
    #[command(after_help = "Example: gulp serve data/train data/val --port 8000")]
    Serve(ServeArgs),
    /// `gulp serve` in a build without it: an error that says so.
    #[cfg(not(feature = "serve"))]
    #[command(hide = true, disable_help_flag = true)]
    Serve {
        /// Whatever was given.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// Arguments of `gulp serve`.
#[cfg(feature = "serve")]
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The gulp directories (local or s3://).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The address to listen on; anything but a loopback address makes the
    /// data visible to the network.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// A `gulp lint` report (its JSON or text) to show on the overview.
    #[arg(long, value_name = "FILE")]
    pub lint: Option<PathBuf>,
    /// The meta key holding an item's class.
    #[arg(long, default_value = "label", value_name = "KEY")]
    pub label_key: String,
}

/// Arguments of `gulp merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The directory to merge into.
    pub out: PathBuf,
    /// The shard directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
}

/// Arguments of `gulp status`.
#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The output directory of the sharded ingest.
    pub dir: PathBuf,
    /// The number of tasks (read from the run's plan while it is under way).
    #[arg(long, value_name = "N")]
    pub shards: Option<NonZeroUsize>,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The input layouts `gulp ingest` reads.
#[derive(Debug, Subcommand)]
pub(crate) enum IngestKind {
    /// 20BN JSON videos (Something-Something, Jester): a JSON list (`.json` or
    /// `.json.gz`) of `{"id": ..., "template": ...}`; videos in
    /// `<videos_dir>/<id>/` (one video each). 8 fps unless `--frame-rate`.
    #[command(name = "20bn-json")]
    TwentyBnJson {
        /// The JSON list.
        input_json: PathBuf,
        /// The folder with one sub-folder per id.
        videos_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        /// The field of each entry that holds the label.
        #[arg(long, default_value = "template")]
        label_name: String,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// 20BN CSV webm (Jester): `id;label` lines (or `id` alone, labelled
    /// `dummy`); videos are `<videos_dir>/<id>.webm`. 8 fps unless
    /// `--frame-rate`.
    #[command(name = "20bn-csv-webm")]
    TwentyBnCsvWebm {
        /// The CSV list.
        input_csv: PathBuf,
        /// The folder of `<id>.webm` files.
        videos_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// 20BN CSV JPEG frame folders: `id;label` lines; frames are the JPEG
    /// files of `<jpeg_dir>/<id>/` in name order, stored as they are unless
    /// `--frame-size` asks for a resize.
    #[command(name = "20bn-csv-jpeg")]
    TwentyBnCsvJpeg {
        /// The CSV list.
        input_csv: PathBuf,
        /// The folder with one frame folder per id.
        jpeg_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// Videos in class folders: `<videos_dir>/<label>/<video>` (mp4, webm,
    /// mkv, avi, mov, ...); ids are `<label>-<file name>`.
    VideoFolder {
        /// The folder of class folders.
        videos_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// Images in class folders: `<images_dir>/<label>/<image>` (JPEG, PNG,
    /// BMP, GIF, TIFF, WebP), one frame per item; ids `<label>-<file name>`.
    ImageFolder {
        /// The folder of class folders.
        images_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// A list of images: one `path,label` per line; ids `<label>-<path>`.
    ImageList {
        /// The list file.
        list_file: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        /// The folder the listed paths are relative to.
        #[arg(long, value_name = "DIR", default_value = ".")]
        root_path: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// Kinetics: the annotation CSV (`label,youtube_id,time_start,time_end,
    /// ...`) and videos anywhere under `<videos_dir>` named
    /// `<youtube_id>_<start>_<end>.<ext>` (six-digit times) or
    /// `<youtube_id>.<ext>`.
    Kinetics {
        /// The annotation CSV.
        input_csv: PathBuf,
        /// The folder of videos (searched recursively).
        videos_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// ActivityNet: the annotation JSON (`{"database": {...}}`) and videos
    /// `<videos_dir>/<youtube_id>.<ext>` (or `v_<youtube_id>.<ext>`) of the
    /// chosen subset; the annotations' labels are numbered in
    /// label2idx.json.
    Activitynet {
        /// The annotation JSON.
        input_json: PathBuf,
        /// The folder of videos.
        videos_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        /// The subset to take (`training`, `validation`, `testing`).
        #[arg(long, default_value = "training")]
        phase: String,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// EPIC-Kitchens: the action annotation CSV (`video_id`, `start_frame`,
    /// `stop_frame`, ...) and videos `<video_id>.<ext>` or JPEG frame
    /// folders `<video_id>/` anywhere under `<videos_dir>`; one item per
    /// video, its actions as `segments` in its meta (frames from 0, end
    /// excluded). Keep the source's rate (no `--frame-rate`) so that the
    /// frame numbers hold.
    EpicKitchens {
        /// The annotation CSV.
        input_csv: PathBuf,
        /// The folder of videos or frame folders (searched recursively).
        videos_dir: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        #[command(flatten)]
        opts: IngestArgs,
    },
    /// A manifest of clips of videos (Panda-70M, HowTo100M, WebVid,
    /// VGGSound): a `.csv`, `.jsonl` or `.parquet` table with a row per
    /// clip: `path` (the video), optionally `id`, `label` (numbered in
    /// label2idx.json), `start` and `end` in seconds or H:MM:SS.fff (the
    /// whole video without them). Every column is kept in the clip's meta.
    /// Each video is decoded once for all its clips, which take the frames
    /// shown in their span (docs/manifests.md).
    Manifest {
        /// The manifest (.csv, .jsonl or .parquet; .csv.gz and .jsonl.gz
        /// too).
        manifest: PathBuf,
        /// The gulp directory to write (created if missing).
        output_dir: PathBuf,
        /// The folder relative paths are taken from (default: the
        /// manifest's folder).
        #[arg(long, value_name = "DIR")]
        root: Option<PathBuf>,
        /// One item per video instead of one per row, its rows kept as the
        /// item's `segments` (seconds), read with gulp.Segments: no frame
        /// is stored twice when rows overlap.
        #[arg(long)]
        segments: bool,
        /// The column of a role when it is not the role's name, e.g.
        /// `--column path=video_file --column start=start_seconds` (roles:
        /// path, id, label, start, end).
        #[arg(long, value_name = "ROLE=COLUMN")]
        column: Vec<String>,
        /// The length in seconds of a clip whose row has a start and no end
        /// (VGGSound's 10 s).
        #[arg(long, value_name = "SECONDS")]
        clip_length: Option<f64>,
        #[command(flatten)]
        opts: IngestArgs,
    },
}

/// Options of every `gulp ingest` subcommand.
#[derive(Debug, Clone, Args)]
pub(crate) struct IngestArgs {
    /// Items per chunk.
    #[arg(
        long,
        visible_alias = "images-per-chunk",
        value_name = "N",
        default_value = "100"
    )]
    pub videos_per_chunk: NonZeroUsize,
    /// Worker threads that decode, resize and encode (default: all cores).
    #[arg(long, value_name = "N")]
    pub num_workers: Option<NonZeroUsize>,
    /// Resize frames so that their shorter edge is N pixels (default: keep
    /// the size).
    #[arg(long, visible_alias = "image-size", value_name = "N")]
    pub frame_size: Option<NonZeroU32>,
    /// Then bring frames whose longer edge is over N pixels down to N (as
    /// FFCV's max_resolution; smaller JPEGs are stored as they are).
    #[arg(long, value_name = "N")]
    pub max_size: Option<NonZeroU32>,
    /// Sample videos at this many frames per second (default: 8 for the 20BN
    /// layouts, every frame for the others).
    #[arg(long, value_name = "FPS")]
    pub frame_rate: Option<f64>,
    /// JPEG quality of the frames gulp encodes (stored JPEGs keep theirs).
    #[arg(long, value_name = "Q", default_value = "90", value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: u8,
    /// Chroma subsampling of the frames gulp encodes: auto is 4:2:0 for
    /// video frames (the chroma resolution videos have) and 4:4:4 for images;
    /// 444 is gulpio2's layout for everything.
    #[arg(long, value_parser = ChoiceParser::<gulp_ingest::SubsamplingChoice>::new(), default_value = "auto")]
    pub subsampling: gulp_ingest::SubsamplingChoice,
    /// Threads each ffmpeg process decodes a video with (default: the cores
    /// divided among the workers, at least 1).
    #[arg(long, value_name = "N")]
    pub decode_threads: Option<NonZeroU32>,
    /// Keep each video's sound beside its frames (16-bit PCM, resampled by
    /// ffmpeg in the same decode); an item whose video has none is marked
    /// so.
    #[arg(long)]
    pub audio: bool,
    /// With --audio: samples per second.
    #[arg(long, value_name = "HZ", default_value = "16000", requires = "audio", value_parser = clap::value_parser!(u32).range(1..=768_000))]
    pub audio_rate: u32,
    /// With --audio: channels (1 mixes down to mono).
    #[arg(long, value_name = "N", default_value = "1", requires = "audio", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub audio_channels: u16,
    /// Shuffle the items before chunking.
    #[arg(long)]
    pub shuffle: bool,
    /// The shuffle seed (default: a random one, printed in the summary).
    #[arg(long, value_name = "N", requires = "shuffle")]
    pub seed: Option<u64>,
    /// The meta format of the chunks (json is what gulpio2 reads).
    #[arg(long, value_enum, default_value = "json")]
    pub meta_format: FormatArg,
    /// Stop at the first item that fails instead of skipping it.
    #[arg(long)]
    pub strict: bool,
    /// No progress bar and no summary; what was skipped, recovered or
    /// warned about is still named on stderr, one line each.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also write the run's report as JSON to FILE (the counts, the chunks,
    /// and every skipped item with its error), in every mode.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Task I of N of a sharded ingest: writes only the chunks k with k % N
    /// == I (chunk k holds the list items from k times --videos-per-chunk),
    /// so N tasks into one shared directory give what one run gives.
    /// `auto`: from SLURM_ARRAY_TASK_ID (with SLURM_ARRAY_TASK_COUNT or
    /// _MIN/_MAX) or JOB_COMPLETION_INDEX (with --shard-count or
    /// GULP_SHARD_COUNT). See docs/scale-out.md.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// After the ingest, lint the output directory (`gulp lint` with its
    /// defaults: all checks; items already there count, so a new item that
    /// copies an old one is found) and print the findings.
    #[arg(long)]
    pub lint: bool,
    /// With --lint: also write the lint report as JSON to FILE.
    #[arg(long, value_name = "FILE", requires = "lint")]
    pub lint_json: Option<PathBuf>,
    /// The number of tasks for `--shard auto` on Kubernetes (an Indexed
    /// Job's completions).
    #[arg(long, value_name = "N", requires = "shard")]
    pub shard_count: Option<NonZeroUsize>,
}

/// Arguments of `gulp check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Also decode every frame (on all cores) and report those that fail.
    #[arg(long)]
    pub decode: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `gulp lint`.
#[derive(Debug, Args)]
pub(crate) struct LintArgs {
    /// The gulp directories (their index in the report is their position
    /// here; for copies across them, --ids-out keeps the one in the first).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The checks to run, comma-separated (default: all): exact_duplicate,
    /// near_duplicate, leak, dark, light, blank, low_information, blurry,
    /// frozen, short, odd_size, odd_aspect, silent_audio, clipped_audio,
    /// label.
    #[arg(long, value_name = "A,B", value_parser = parse_checks)]
    pub checks: Option<CheckList>,
    /// Write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the ids to keep to FILE, one per line (once per DIR, in the
    /// same order): one item per group of copies, none with a finding of
    /// the checks of --drop. ClipLoader(ids=FILE) takes it as it is.
    #[arg(long, value_name = "FILE")]
    pub ids_out: Vec<PathBuf>,
    /// With --ids-out: also leave out the items with a finding of these
    /// checks (comma-separated).
    #[arg(long, value_name = "A,B", value_parser = parse_checks, requires = "ids_out")]
    pub drop: Option<CheckList>,
    /// Decoding threads (default: all cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<NonZeroUsize>,
    /// The meta_data key that holds an item's label.
    #[arg(long, value_name = "KEY", default_value = gulp_lint::LABEL_KEY)]
    pub label_key: String,
    /// No progress bar and no table (the exit status and --json still tell).
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
}

/// A comma-separated list of lint checks.
#[derive(Debug, Clone)]
pub(crate) struct CheckList(pub Vec<gulp_lint::Check>);

fn parse_checks(text: &str) -> Result<CheckList, String> {
    gulp_lint::Check::parse_list(text).map(CheckList)
}

/// The threshold of each check of `gulp lint` (docs/lint.md).
#[derive(Debug, Clone, Args)]
pub(crate) struct ThresholdArgs {
    /// near_duplicate, leak: at most N of the 64 perceptual-hash bits differ.
    #[arg(long, value_name = "N", default_value_t = gulp_lint::NEAR_DISTANCE)]
    pub near_distance: u32,
    /// dark: the 99th percentile of luma (0-255) is at most this.
    #[arg(long, value_name = "LUMA", default_value_t = gulp_lint::DARK)]
    pub dark: f64,
    /// light: the 5th percentile of luma is at least this.
    #[arg(long, value_name = "LUMA", default_value_t = gulp_lint::LIGHT)]
    pub light: f64,
    /// blank: the standard deviation of luma is at most this.
    #[arg(long, value_name = "STD", default_value_t = gulp_lint::BLANK)]
    pub blank: f64,
    /// low_information: the entropy of the luma histogram is at most this
    /// many bits.
    #[arg(long, value_name = "BITS", default_value_t = gulp_lint::LOW_INFORMATION)]
    pub low_information: f64,
    /// blurry: the blur score (the larger of the frame's fine detail and
    /// its sharpest edges' steepness; docs/lint.md) is at most this.
    #[arg(long, value_name = "X", default_value_t = gulp_lint::BLURRY)]
    pub blurry: f64,
    /// frozen: consecutive frames whose thumbnails differ by at most this
    /// (mean absolute luma) are the same picture.
    #[arg(long, value_name = "LUMA", default_value_t = gulp_lint::FROZEN_DIFF)]
    pub frozen_diff: f64,
    /// frozen: runs of at least N same frames.
    #[arg(long, value_name = "N", default_value_t = gulp_lint::FROZEN_FRAMES)]
    pub frozen_frames: usize,
    /// short: items of fewer than N frames (in directories of videos).
    #[arg(long, value_name = "N", default_value_t = gulp_lint::MIN_FRAMES)]
    pub min_frames: usize,
    /// odd_size: frame side (square root of the area) X times off the
    /// directory's median, either way.
    #[arg(long, value_name = "X", default_value_t = gulp_lint::ODD_SIZE)]
    pub odd_size: f64,
    /// odd_aspect: aspect ratio X times off the directory's median, either way.
    #[arg(long, value_name = "X", default_value_t = gulp_lint::ODD_ASPECT)]
    pub odd_aspect: f64,
    /// silent_audio: an item's sound whose RMS level is at most this many
    /// dBFS (-3 for a full-scale sine, -120 for digital silence).
    #[arg(long, value_name = "DBFS", default_value_t = gulp_lint::SILENT_AUDIO, allow_negative_numbers = true)]
    pub silent_audio: f64,
    /// clipped_audio: an item's sound with at least this fraction of its
    /// samples at full scale.
    #[arg(long, value_name = "FRACTION", default_value_t = gulp_lint::CLIPPED_AUDIO)]
    pub clipped_audio: f64,
    /// label: classes with fewer than N items.
    #[arg(long, value_name = "N", default_value_t = gulp_lint::MIN_CLASS_ITEMS)]
    pub min_class_items: usize,
}

/// Arguments of `gulp dump-meta`.
#[derive(Debug, Args)]
pub(crate) struct DumpMetaArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Print only this id (repeat for several, printed in the order given).
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// Print only chunk N (the N of `data_N.gulp`).
    #[arg(long, value_name = "N")]
    pub chunk: Option<u64>,
    /// Leave out `frame_info`: print `{id: {"meta_data": [...]}}`.
    #[arg(long)]
    pub no_frame_info: bool,
}

/// Arguments of `gulp recover`.
#[derive(Debug, Args)]
pub(crate) struct RecoverArgs {
    /// The gulp directory.
    pub dir: PathBuf,
}

/// Arguments of `gulp copy`.
#[derive(Debug, Args)]
pub(crate) struct CopyArgs {
    /// The gulp directory to copy (a path or s3://bucket/prefix).
    pub src: PathBuf,
    /// Where to copy it (a path or s3://bucket/prefix).
    pub dst: PathBuf,
    /// No progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Arguments of `gulp preview`.
#[derive(Debug, Args)]
pub(crate) struct PreviewArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// The item to show.
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// Which frames, in gulpio2's selection syntax: `1:10:2`, `::-1`,
    /// `-5:`, `0,5,9`; default all.
    #[arg(long, value_name = "SEL", allow_hyphen_values = true)]
    pub select: Option<String>,
    /// Old spelling of --select.
    #[arg(
        long,
        hide = true,
        allow_hyphen_values = true,
        conflicts_with = "select"
    )]
    pub frames: Option<String>,
    /// Short edge of each tile, in pixels.
    #[arg(long, value_name = "N", default_value = "128", value_parser = clap::value_parser!(u32).range(8..=4096))]
    pub tile: u32,
    /// The output file: `.png` for a contact sheet, `.gif` for an animation.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// Arguments of `gulp info`.
#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Print the summary as JSON (with the full label list).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `gulp index`.
#[derive(Debug, Args)]
pub(crate) struct IndexArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Remove the index file instead.
    #[arg(long)]
    pub remove: bool,
}

/// Arguments of `gulp convert`.
#[derive(Debug, Args)]
pub(crate) struct ConvertArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// The meta format to write.
    #[arg(long, value_enum)]
    pub to: FormatArg,
}

/// A meta format on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// GulpIO's JSON (what gulpio2 reads).
    Json,
    /// gulp's msgpack meta, with a fingerprint and per-frame checksums.
    Msgpack,
}

impl From<FormatArg> for gulp_format::MetaFormat {
    fn from(arg: FormatArg) -> Self {
        match arg {
            FormatArg::Json => gulp_format::MetaFormat::Json,
            FormatArg::Msgpack => gulp_format::MetaFormat::Msgpack,
        }
    }
}

/// Arguments of `gulp extract`.
#[derive(Debug, Args)]
pub(crate) struct ExtractArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// The item to extract (repeat for several).
    #[arg(long = "id", value_name = "ID", required = true)]
    pub ids: Vec<String>,
    /// Which frames, in gulpio2's selection syntax: `1:10:2`, `::-1`,
    /// `-5:`, `0,5,9`; default all.
    #[arg(long, value_name = "SEL", allow_hyphen_values = true)]
    pub select: Option<String>,
    /// Old spelling of --select.
    #[arg(
        long,
        hide = true,
        allow_hyphen_values = true,
        conflicts_with = "select"
    )]
    pub frames: Option<String>,
    /// The output directory (created if missing; files in it are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Decode the frames and write them in this image format instead of the
    /// stored JPEG bytes.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub decode: Option<ImageFormatArg>,
    /// Also write the item's sound, the whole track whatever --select, as
    /// `OUT/<id>/audio.wav` (16-bit PCM at its stored rate and channels).
    /// An item without sound is said so, and its frames are written.
    #[arg(long)]
    pub audio: bool,
}

/// An image format `gulp extract --decode` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ImageFormatArg {
    /// PNG, 8-bit gray or RGB.
    Png,
}

/// Arguments of `gulp bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Number of threads (default: all cores; with --loader, the cores
    /// divided among the ranks of the node, as the loader does).
    #[arg(long, value_name = "N")]
    pub threads: Option<NonZeroUsize>,
    /// Only read the JPEG bytes; do not decode.
    #[arg(long)]
    pub raw: bool,
    /// Decode at this DCT scale: 1/2, 1/4, 1/8 or any n/8; default 1 (full
    /// size).
    #[arg(long, value_name = "N/D", value_parser = parse_scale, conflicts_with = "raw")]
    pub dct_scale: Option<Scale>,
    /// Decode only a centred region of H,W pixels (or N: N,N) of each
    /// (scaled) frame, as a crop for training does (region decoding);
    /// frames smaller than the region give the whole frame.
    #[arg(long, value_name = "H,W", value_parser = parse_hw, conflicts_with = "raw")]
    pub region: Option<(usize, usize)>,
    /// The inverse DCT.
    #[arg(long, value_parser = ChoiceParser::<Dct>::new(), default_value = Dct::default().name())]
    pub dct: Dct,
    /// The JPEG codec (default: libjpeg-turbo when the build has it).
    #[arg(long, value_parser = ChoiceParser::<Codec>::new())]
    pub codec: Option<Codec>,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Measure the clip loader instead (training batches: sampling, crop,
    /// resize, flip; see `docs/loader.md`): clips/s over `--epochs` passes,
    /// with `gulp.ClipLoader(DIR)`'s options unless given below.
    #[arg(long, conflicts_with_all = ["raw", "dct_scale", "region"])]
    pub loader: bool,
    #[command(flatten)]
    pub clips: LoaderArgs,
    /// Old spelling of --dct-scale.
    #[arg(long, hide = true, value_parser = parse_scale, conflicts_with = "dct_scale")]
    pub scale: Option<Scale>,
}

/// The clip loader's options for `gulp bench --loader`: the names, values
/// and defaults of `gulp.ClipLoader`'s arguments, all from gulp-loader
/// (`LoaderOptions::default()`, each option's list of names).
#[derive(Debug, Args)]
#[command(next_help_heading = "Loader (with --loader)")]
pub(crate) struct LoaderArgs {
    /// Frames per clip.
    #[arg(long, value_name = "T", default_value_t = LoaderOptions::default().frames)]
    pub frames: usize,
    /// How a clip's frames are chosen.
    #[arg(long, value_parser = ChoiceParser::<Sampling>::new(),
          default_value = LoaderOptions::default().sampling.name())]
    pub sampling: Sampling,
    /// Step between the frames of a window.
    #[arg(long, default_value_t = LoaderOptions::default().step)]
    pub step: usize,
    /// Short edge after resizing, or none (the stored size).
    #[arg(long, value_name = "PIXELS|none", value_parser = parse_resize,
          default_value = DEFAULT_RESIZE.as_str())]
    pub resize: Resize,
    /// Output size of a clip's frames: H,W, or N for N,N (Python's
    /// `size=(H, W)` or `size=N`).
    #[arg(long, value_name = "H,W", value_parser = parse_hw,
          default_value = DEFAULT_SIZE.as_str())]
    pub size: (usize, usize),
    /// The crop of each clip.
    #[arg(long, value_parser = ChoiceParser::<CropMode>::new(),
          default_value = LoaderOptions::default().spatial.crop.name())]
    pub crop: CropMode,
    /// Mirror half of the clips (training only).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set,
          default_value_t = LoaderOptions::default().spatial.flip)]
    pub flip: bool,
    /// Clips per batch.
    #[arg(long, default_value_t = LoaderOptions::default().batch_size)]
    pub batch_size: usize,
    /// The order of each epoch.
    #[arg(long, value_parser = ChoiceParser::<Shuffle>::new(),
          default_value = LoaderOptions::default().order.shuffle.name())]
    pub shuffle: Shuffle,
    /// Chunks shuffled together by --shuffle chunks.
    #[arg(long, value_name = "N")]
    pub chunk_window: Option<NonZeroUsize>,
    /// Drop the tail of an epoch that does not fill a batch (and does not
    /// divide among the ranks).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set,
          default_value_t = LoaderOptions::default().order.drop_last)]
    pub drop_last: bool,
    /// Passes over the directory.
    #[arg(long, default_value_t = 1)]
    pub epochs: u64,
    /// Seed of the shuffle and the random draws.
    #[arg(long, default_value_t = LoaderOptions::default().order.seed)]
    pub seed: u64,
    /// Old spelling of --crop (the mode).
    #[arg(long = "crop-mode", hide = true, value_parser = ChoiceParser::<CropMode>::new())]
    pub crop_mode: Option<CropMode>,
    /// Old spelling of --flip false.
    #[arg(long, hide = true)]
    pub no_flip: bool,
    /// Old spelling of --shuffle chunks --chunk-window N.
    #[arg(long, hide = true, value_name = "N")]
    pub shuffle_chunks: Option<NonZeroUsize>,
}

/// A value parser for an option with named values ([`Choice`]): its names
/// are the possible values `--help` lists, and an unknown name is an error
/// that lists them.
#[derive(Debug)]
pub(crate) struct ChoiceParser<T>(std::marker::PhantomData<T>);

impl<T> ChoiceParser<T> {
    /// The parser.
    pub(crate) fn new() -> ChoiceParser<T> {
        ChoiceParser(std::marker::PhantomData)
    }
}

impl<T> Clone for ChoiceParser<T> {
    fn clone(&self) -> Self {
        ChoiceParser::new()
    }
}

impl<T: Choice + Send + Sync> clap::builder::TypedValueParser for ChoiceParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        T::parse_choice(&text).map_err(|e| {
            let flag = arg.map_or(String::new(), |a| format!("--{}: ", a.get_id()));
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{flag}{e}\n"))
                .with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            T::NAMES
                .iter()
                .map(|n| clap::builder::PossibleValue::new(*n)),
        ))
    }
}

fn parse_scale(text: &str) -> Result<Scale, String> {
    Scale::parse(text).ok_or_else(|| format!("{text:?} is not n/8 for n from 1 to 8 (e.g. 1/2)"))
}

/// `H,W` or `N` (a square): sizes in the order Python's `(H, W)` gives them
/// ([`gulp_loader::parse_size`], which `gulp serve` reads them with too).
fn parse_hw(text: &str) -> Result<(usize, usize), String> {
    let ((h, w), form) = gulp_loader::parse_size(text)
        .ok_or_else(|| format!("{text:?} is not H,W or N (e.g. 112,144 or 112)"))?;
    if form == gulp_loader::SizeForm::WidthXHeight {
        eprintln!("gulp: warning: a size as WxH ({text}) is deprecated: use H,W ({h},{w})");
    }
    Ok((h, w))
}

/// The loader's default size and resize, as the command line spells them.
static DEFAULT_SIZE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| hw_text(LoaderOptions::default().spatial.size));
static DEFAULT_RESIZE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| resize_text(LoaderOptions::default().spatial.resize));

/// The text of a size as [`parse_hw`] reads it.
fn hw_text(size: Option<(usize, usize)>) -> String {
    size.map_or(String::new(), |(h, w)| format!("{h},{w}"))
}

/// A short edge in pixels, or `None` for the stored size (an alias, so that
/// clap takes the whole `Option` from [`parse_resize`] rather than making
/// the flag optional).
pub(crate) type Resize = Option<usize>;

/// A short edge, or `none`.
fn parse_resize(text: &str) -> Result<Resize, String> {
    match text {
        "none" => Ok(None),
        "0" => {
            eprintln!("gulp: warning: --resize 0 is deprecated: use --resize none");
            Ok(None)
        }
        _ => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(format!("{text:?} is not a number of pixels or none")),
        },
    }
}

/// The text of a resize as [`parse_resize`] reads it.
fn resize_text(resize: Option<usize>) -> String {
    resize.map_or("none".into(), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
