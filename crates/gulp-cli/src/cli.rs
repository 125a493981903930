//! The command line: every subcommand, its arguments and its `--help` text.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// gulp: storage for deep learning on videos, compatible with GulpIO.
///
/// A gulp directory holds chunk pairs `data_N.gulp` (JPEG records) and
/// `meta_N.gmeta` (GulpIO's JSON meta or gulp's msgpack meta).
///
/// Exit status: 0 on success, 1 when `gulp check` finds problems, 2 on an
/// error (bad arguments, unreadable input).
#[derive(Debug, Parser)]
#[command(name = "gulp", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    // `Ingest` (`gulp ingest <kind> ...`) goes first here when gulp-ingest
    // provides it; its module will be `cmd/ingest.rs`.
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
    /// Exit status: 0 if the directory is clean, 1 if any problem was found,
    /// 2 if the directory cannot be read at all.
    #[command(after_help = "Example: gulp check data/train --decode")]
    Check(CheckArgs),
    /// Print the meta as JSON, in gulpio2's structure.
    ///
    /// Prints `{id: {"frame_info": [[loc, pad, length], ...], "meta_data":
    /// [...]}}` for every item, chunks in numeric order, whatever the meta
    /// format on disk, with the bytes Python's `json.dump` writes (so
    /// `gulp dump-meta DIR --chunk N` reproduces a gulpio2 meta file exactly).
    /// No newline is added unless stdout is a terminal.
    #[command(after_help = "Example: gulp dump-meta data/train --id 702766 --no-frame-info")]
    DumpMeta(DumpMetaArgs),
    /// Summarise a gulp directory: chunks, items, frames, bytes, formats.
    ///
    /// Also gives the JPEG frame sizes (min, median, max), the labels of
    /// `label2idx.json` if there is one, and warnings about orphan or
    /// temporary files.
    #[command(after_help = "Example: gulp info data/train --json")]
    Info(InfoArgs),
    /// Rewrite every chunk's meta in another format.
    ///
    /// Each meta file is replaced atomically (written under a temporary name,
    /// synced, renamed, directory synced). Chunks already in the target
    /// format are left alone. Converting to msgpack adds a CRC-32 per frame,
    /// read from the data file; converting back to JSON gives exactly the
    /// bytes gulpio2 wrote.
    #[command(after_help = "Example: gulp convert data/train --to msgpack")]
    Convert(ConvertArgs),
    /// Write an item's frames to files.
    ///
    /// Frames go to `OUT/<id>/<index>.jpg`, the index being the frame's
    /// position in the item with five digits (`00000.jpg`), as the stored
    /// JPEG bytes; with `--decode png` they are decoded and written as
    /// `<index>.png`. Characters of the id that cannot be in a file name
    /// (`/`, `\`, NUL, `%`) are written as `%XX`, and `.`/`..`/empty ids are
    /// escaped whole.
    #[command(
        after_help = "Example: gulp extract data/train --id 702766 --frames ::2 --out frames/"
    )]
    Extract(ExtractArgs),
    /// Measure read (and decode) speed over every frame.
    ///
    /// Reads every frame of every chunk and decodes it (unless `--raw`), then
    /// prints frames/s, megapixels/s (decoded pixels) and MB/s (JPEG bytes).
    #[command(after_help = "Example: gulp bench data/train --threads 8")]
    Bench(BenchArgs),
}

/// Arguments of `gulp check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Also decode every frame (on all cores) and report those that fail.
    #[arg(long)]
    pub decode: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `gulp dump-meta`.
#[derive(Debug, Args)]
pub struct DumpMetaArgs {
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

/// Arguments of `gulp info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Print the summary as JSON (with the full label list).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `gulp convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
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
pub struct ExtractArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// The item to extract (repeat for several).
    #[arg(long = "id", value_name = "ID", required = true)]
    pub ids: Vec<String>,
    /// Which frames, in gulpio2's selection syntax: `1:10:2`, `::-1`, `-5:`,
    /// `0,5,9`; default all.
    #[arg(
        long,
        value_name = "SEL",
        default_value = ":",
        allow_hyphen_values = true
    )]
    pub frames: String,
    /// The output directory (created if missing; files in it are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Decode the frames and write them in this image format instead of the
    /// stored JPEG bytes.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub decode: Option<ImageFormatArg>,
}

/// An image format `gulp extract --decode` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageFormatArg {
    /// PNG, 8-bit gray or RGB.
    Png,
}

/// Arguments of `gulp bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The gulp directory.
    pub dir: PathBuf,
    /// Number of threads (default: all cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<NonZeroUsize>,
    /// Only read the JPEG bytes; do not decode.
    #[arg(long)]
    pub raw: bool,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
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
