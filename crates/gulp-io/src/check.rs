//! The checker behind `gulp check` (and the Python package's `check`):
//! every way a gulp directory can be damaged, each reported as a [`Problem`]
//! that says where, and the leftovers of an interrupted write as notes.
//!
//! gulpio2's `gulp2_sanity_check` runs four checks (`sanity_utils.py`): empty
//! meta files, empty data files, data file size against the meta, duplicate
//! ids. Through its CLI two of them can never
//! fire (opening the directory fails first), the size check crashes on an
//! empty chunk and gives a false failure when an id was appended twice. Here
//! the directory is not opened as a whole: each chunk's files are listed and
//! read on their own, so one bad chunk (or an id in two chunks) does not hide
//! the rest, and every record is checked against the data file.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gulp_codec::{ColorMode, FrameDecoder, Image, decode_batch, decode_jpeg};

use crate::{ChunkReader, ReadMode};
use gulp_format::{
    AudioTrack, ChunkFile, ChunkMeta, DATA_EXTENSION, DATA_PREFIX, FrameInfo, ItemMeta,
    META_EXTENSION, META_PREFIX, PAD_BYTE, TEMP_PREFIX, Value, data_file_name, meta_file_name,
    parse_chunk_file_name, read_meta,
};
use serde::Serialize;

/// JPEG start-of-image marker, first two bytes of every frame.
const JPEG_SOI: [u8; 2] = [0xff, 0xd8];
/// JPEG end-of-image marker, last two bytes of every frame.
const JPEG_EOI: [u8; 2] = [0xff, 0xd9];
/// Frames decoded per thread and batch with `--decode` (bounds the memory
/// held by decoded pixels).
const DECODE_BATCH_PER_THREAD: usize = 32;

/// What kind of damage a [`Problem`] is. The kebab-case names are those of
/// the JSON report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A meta file of 0 bytes (gulpio2's check 1).
    EmptyMeta,
    /// A data file of 0 bytes whose meta has frames (gulpio2's check 2).
    EmptyData,
    /// A meta file that cannot be read or parsed.
    MetaUnreadable,
    /// A msgpack meta whose fingerprint does not match its content.
    Fingerprint,
    /// A data file that cannot be opened or read.
    DataUnreadable,
    /// A data file without its meta file.
    OrphanData,
    /// A meta file without its data file.
    OrphanMeta,
    /// A temporary file left by an unfinished write (a note: nothing
    /// committed is damaged).
    TempFile,
    /// A commit cut between its two renames: the data file is in place, its
    /// meta still under the temporary name (a note: `gulp recover` finishes
    /// it).
    UnfinishedCommit,
    /// A name gulpio2's `data*.gulp` / `meta*.gmeta` globs pick up but that is
    /// not a chunk file (gulpio2 then fails to open the directory).
    StrayFile,
    /// The same id in two chunks (gulpio2's check 4).
    DuplicateId,
    /// An item whose `meta_data` list is empty (gulpio2 raises `IndexError`).
    EmptyMetaData,
    /// A `[loc, pad, length]` that breaks the record rules (pad over 3,
    /// length not a multiple of 4, ...).
    BadFrameInfo,
    /// A record that ends past the end of the data file.
    OutOfBounds,
    /// Two records sharing bytes.
    Overlap,
    /// A pad byte that is not 0x00.
    PadNotZero,
    /// A frame that does not start with the JPEG marker FFD8.
    JpegStart,
    /// A frame that does not end with the JPEG marker FFD9.
    JpegEnd,
    /// A frame whose CRC-32 differs from the one in the msgpack meta.
    Checksum,
    /// Bytes in the data file after the last record (gulpio2's check 3).
    SizeMismatch,
    /// A frame the JPEG decoder rejects (`--decode`).
    Decode,
    /// A frame time outside the item's own span (the `start`/`end` of a
    /// clip's meta, in seconds).
    FrameTimes,
    /// The directory's index file (`gulp_index.bin`): a note when it is
    /// stale or damaged (never used then, and rebuilt on the next open); a
    /// problem when it passes every check that opening makes yet differs
    /// from what the meta files give.
    IndexFile,
}

/// One thing wrong with a gulp directory, and where.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// What is wrong, as a category.
    pub kind: ProblemKind,
    /// The file concerned (for record problems, the data file).
    #[serde(serialize_with = "serialize_path")]
    pub file: PathBuf,
    /// The item id, for problems of one item.
    pub id: Option<String>,
    /// The frame index within the item, for problems of one frame.
    pub frame: Option<usize>,
    /// The byte offset: the record's `loc` for frame problems, the offset in
    /// the meta file for parse errors.
    pub offset: Option<u64>,
    /// What is wrong, in words.
    pub message: String,
}

impl Problem {
    fn file(kind: ProblemKind, file: &Path, message: impl Into<String>) -> Problem {
        Problem {
            kind,
            file: file.to_owned(),
            id: None,
            frame: None,
            offset: None,
            message: message.into(),
        }
    }

    fn frame(
        kind: ProblemKind,
        file: &Path,
        id: &str,
        frame: usize,
        offset: u64,
        message: impl Into<String>,
    ) -> Problem {
        Problem {
            kind,
            file: file.to_owned(),
            id: Some(id.to_owned()),
            frame: Some(frame),
            offset: Some(offset),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(id) = &self.id {
            write!(f, ": id {id:?}")?;
        }
        if let Some(frame) = self.frame {
            write!(f, " frame {frame}")?;
        }
        if let Some(offset) = self.offset {
            write!(f, " at byte {offset}")?;
        }
        write!(f, ": {}", self.message)
    }
}

fn serialize_path<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// What to check beyond the structure.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Decode every frame.
    pub decode: bool,
    /// Threads for decoding.
    pub threads: usize,
}

/// The result of checking a directory.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Chunks (data and meta file pairs) found.
    pub chunks: usize,
    /// Items in the chunks whose meta could be read.
    pub items: usize,
    /// Frames in the chunks whose meta could be read.
    pub frames: usize,
    /// Total size of the data files, in bytes.
    pub bytes: u64,
    /// Frames decoded (`--decode`).
    pub decoded: usize,
    /// Everything found wrong, chunk by chunk.
    pub problems: Vec<Problem>,
    /// Leftovers of an interrupted write (temporary files, a commit cut
    /// between its two renames): nothing committed is damaged, and
    /// `gulp recover` (or the next ingest) clears them.
    pub notes: Vec<Problem>,
}

impl Report {
    /// Whether no problem was found (notes do not count).
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks the directory `dir`; `progress` is called with the number of frames
/// done as checking goes on. Fails only if the directory cannot be listed;
/// everything else is a [`Problem`] in the report.
pub fn check_directory(
    dir: &Path,
    options: Options,
    progress: &dyn Fn(u64),
) -> std::io::Result<Report> {
    let mut report = Report::default();
    let chunks = list_chunks(dir, &mut report.problems, &mut report.notes)?;
    report.chunks = chunks.len();
    // id -> meta file of the first chunk that has it.
    let mut seen: HashMap<String, Arc<Path>> = HashMap::new();
    for (chunk, data_path, meta_path) in chunks {
        let mut checker = ChunkChecker {
            chunk,
            data_path: &data_path,
            meta_path: &meta_path,
            options,
            report: &mut report,
            progress,
        };
        checker.run(&mut seen);
    }
    drop(seen);
    if report.is_clean() && !gulp_store::is_remote(dir) {
        check_index_file(dir, &mut report);
    }
    Ok(report)
}

/// Compares the directory's index file, if it has one, with what its meta
/// files give (a directory without problems only: an index is never built
/// from one with them).
fn check_index_file(dir: &Path, report: &mut Report) {
    let path = dir.join(gulp_format::INDEX_FILE);
    if !path.exists() {
        return;
    }
    let gd = match crate::GulpDirectory::options()
        .index(crate::IndexPolicy::Off)
        .open(dir)
    {
        Ok(gd) => gd,
        Err(e) => {
            report.problems.push(Problem::file(
                ProblemKind::MetaUnreadable,
                dir,
                e.to_string(),
            ));
            return;
        }
    };
    let rebuilt = "it is not used, and is rebuilt when the directory is next opened";
    match gd.index_state_now() {
        Some(crate::IndexState::Stale(why)) => report.notes.push(Problem::file(
            ProblemKind::IndexFile,
            &path,
            format!("index file stale ({why}): {rebuilt}"),
        )),
        Some(crate::IndexState::Damaged(why)) => report.notes.push(Problem::file(
            ProblemKind::IndexFile,
            &path,
            format!("index file damaged ({why}): {rebuilt}"),
        )),
        Some(crate::IndexState::Fresh(index)) => match gd.expected_index() {
            Ok(Some(expected)) if expected == index.bytes() => {}
            Ok(_) => report.problems.push(Problem::file(
                ProblemKind::IndexFile,
                &path,
                "index file differs from the meta files though their sizes and times match \
                 it (delete it; it is rebuilt when the directory is next opened)",
            )),
            Err(e) => {
                report
                    .problems
                    .push(Problem::file(ProblemKind::IndexFile, &path, e.to_string()))
            }
        },
        Some(crate::IndexState::Missing) | None => {}
    }
}

/// Lists the chunk pairs of `dir` in numeric order; orphan, temporary and
/// stray files become problems.
fn list_chunks(
    dir: &Path,
    problems: &mut Vec<Problem>,
    notes: &mut Vec<Problem>,
) -> std::io::Result<Vec<(u64, PathBuf, PathBuf)>> {
    let mut data = BTreeMap::new();
    let mut meta = BTreeMap::new();
    let mut others = Vec::new();
    let entries = gulp_store::list_dir(dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    for entry in entries {
        let (name, path) = (entry.name.as_str(), entry.path);
        match parse_chunk_file_name(name) {
            Some(ChunkFile::Data(n)) => {
                data.insert(n, path);
            }
            Some(ChunkFile::Meta(n)) => {
                meta.insert(n, path);
            }
            None if name.starts_with(TEMP_PREFIX) => notes.push(Problem::file(
                ProblemKind::TempFile,
                &path,
                "temporary file of an unfinished write (`gulp recover` removes it)",
            )),
            None if globbed_by_gulpio2(name) => others.push(Problem::file(
                ProblemKind::StrayFile,
                &path,
                "not a chunk file name, but gulpio2 would take it for one and fail",
            )),
            None => {}
        }
    }
    others.sort_by(|a, b| a.file.cmp(&b.file));
    let mut pairs = Vec::new();
    for (n, data_path) in data {
        let temp_meta = dir.join(format!("{TEMP_PREFIX}{}", meta_file_name(n)));
        let temp_data = dir.join(format!("{TEMP_PREFIX}{}", data_file_name(n)));
        match meta.remove(&n) {
            Some(meta_path) => pairs.push((n, data_path, meta_path)),
            // What `crate::recover` rolls forward: the data file renamed,
            // its meta not yet.
            None if temp_meta.exists() && !temp_data.exists() => {
                // One note for the commit, not another for its meta.
                notes.retain(|n| n.file != temp_meta);
                notes.push(Problem::file(
                    ProblemKind::UnfinishedCommit,
                    &data_path,
                    format!(
                        "a commit cut between its two renames (its meta is still {}); \
                     gulpio2 cannot open the directory until `gulp recover` finishes it",
                        temp_meta.display()
                    ),
                ));
            }
            None => problems.push(Problem::file(
                ProblemKind::OrphanData,
                &data_path,
                "data file without its meta file: its frames are unreachable",
            )),
        }
    }
    for meta_path in meta.into_values() {
        problems.push(Problem::file(
            ProblemKind::OrphanMeta,
            &meta_path,
            "meta file without its data file",
        ));
    }
    problems.extend(others);
    notes.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(pairs)
}

/// Whether gulpio2's globs `data*.gulp` / `meta*.gmeta` match `name` (they
/// never match a leading dot).
fn globbed_by_gulpio2(name: &str) -> bool {
    let glob = |prefix: &str, ext: &str| {
        let stem = prefix.trim_end_matches('_');
        name.len() >= stem.len() + ext.len() && name.starts_with(stem) && name.ends_with(ext)
    };
    glob(DATA_PREFIX, DATA_EXTENSION) || glob(META_PREFIX, META_EXTENSION)
}

/// A record that passed the structural checks, to decode.
struct ToDecode<'a> {
    id: &'a str,
    frame: usize,
    loc: u64,
    jpeg: Cow<'a, [u8]>,
}

/// How far a frame time may stray from its item's span: the rounding of
/// a time base (a microsecond is finer than any of ffmpeg's).
const TIME_SLACK: f64 = 1e-6;

/// A record's place in the data file, for the overlap check.
struct Span<'a> {
    start: u64,
    end: u64,
    id: &'a str,
    /// The frame, or `None` for the item's audio record.
    frame: Option<usize>,
}

/// "frame K" or "audio", for messages about a [`Span`].
fn record_name(frame: Option<usize>) -> String {
    frame.map_or_else(|| "audio".to_owned(), |k| format!("frame {k}"))
}

struct ChunkChecker<'r> {
    chunk: u64,
    data_path: &'r Path,
    meta_path: &'r Path,
    options: Options,
    report: &'r mut Report,
    progress: &'r dyn Fn(u64),
}

impl ChunkChecker<'_> {
    fn push(&mut self, problem: Problem) {
        self.report.problems.push(problem);
    }

    fn run(&mut self, seen: &mut HashMap<String, Arc<Path>>) {
        let data_len = match gulp_store::file_len(self.data_path) {
            Ok(len) => Some(len),
            Err(e) => {
                let problem = Problem::file(
                    ProblemKind::DataUnreadable,
                    self.data_path,
                    format!("cannot read: {e}"),
                );
                self.push(problem);
                None
            }
        };
        self.report.bytes += data_len.unwrap_or(0);
        let Some(meta) = self.load_meta() else { return };
        self.report.items += meta.len();
        self.report.frames += meta.n_frames();

        let here: Arc<Path> = Arc::from(self.meta_path);
        for id in meta.ids() {
            match seen.get(id) {
                Some(first) => {
                    let problem = Problem {
                        kind: ProblemKind::DuplicateId,
                        file: self.meta_path.to_owned(),
                        id: Some(id.to_owned()),
                        frame: None,
                        offset: None,
                        message: format!("id is also in {}", first.display()),
                    };
                    self.push(problem);
                }
                None => {
                    seen.insert(id.to_owned(), Arc::clone(&here));
                }
            }
        }
        for (id, item) in meta.iter() {
            if item.meta_data.is_empty() {
                let problem = Problem {
                    kind: ProblemKind::EmptyMetaData,
                    file: self.meta_path.to_owned(),
                    id: Some(id.to_owned()),
                    frame: None,
                    offset: None,
                    message: "meta_data list is empty (gulpio2 fails to read this item)".into(),
                };
                self.push(problem);
            }
        }

        let n_frames = meta.n_frames();
        let Some(data_len) = data_len else { return };
        if data_len == 0 && n_frames > 0 {
            let problem = Problem::file(
                ProblemKind::EmptyData,
                self.data_path,
                format!("data file is empty, but the meta has {n_frames} frames"),
            );
            self.push(problem);
            (self.progress)(n_frames as u64);
            return;
        }
        let meta = Arc::new(meta);
        let reader = match ChunkReader::with_meta(
            self.data_path.to_owned(),
            self.meta_path.to_owned(),
            self.chunk,
            Arc::clone(&meta),
            ReadMode::Mmap,
        ) {
            Ok(reader) => reader,
            Err(e) => {
                let problem =
                    Problem::file(ProblemKind::DataUnreadable, self.data_path, e.to_string());
                self.push(problem);
                return;
            }
        };
        self.check_records(&meta, &reader);
    }

    /// Reads and parses the meta file; `None` (after reporting) if it cannot
    /// be used.
    fn load_meta(&mut self) -> Option<ChunkMeta> {
        let bytes = match gulp_store::read(self.meta_path) {
            Ok(bytes) => bytes,
            Err(e) => {
                let problem = Problem::file(
                    ProblemKind::MetaUnreadable,
                    self.meta_path,
                    format!("cannot read: {e}"),
                );
                self.push(problem);
                return None;
            }
        };
        if bytes.is_empty() {
            let problem =
                Problem::file(ProblemKind::EmptyMeta, self.meta_path, "meta file is empty");
            self.push(problem);
            return None;
        }
        match read_meta(&bytes) {
            Ok(meta) => Some(meta),
            Err(e) => {
                use gulp_format::ErrorKind as E;
                let kind = match e.kind() {
                    E::Fingerprint { .. } => ProblemKind::Fingerprint,
                    _ => ProblemKind::MetaUnreadable,
                };
                // The id and offset are shown by the problem's location.
                let message = match e.kind() {
                    E::Json { reason, .. } => format!("invalid JSON meta: {reason}"),
                    E::Msgpack { reason, .. } => format!("invalid msgpack meta: {reason}"),
                    E::Item { reason, .. } => format!("invalid meta: {reason}"),
                    _ => e.to_string(),
                };
                let problem = Problem {
                    kind,
                    file: self.meta_path.to_owned(),
                    id: e.id().map(str::to_owned),
                    frame: None,
                    offset: e.offset(),
                    message,
                };
                self.push(problem);
                None
            }
        }
    }

    fn check_records(&mut self, meta: &ChunkMeta, reader: &ChunkReader) {
        let data_len = reader.data_len();
        let mut spans = Vec::with_capacity(meta.n_frames());
        let mut to_decode = Vec::new();
        for (id, item) in meta.iter() {
            for (k, fi) in item.frame_info.iter().enumerate() {
                let checksum = item.frame_checksums.get(k).copied();
                if let Some(jpeg) = self.check_record(reader, id, k, fi, checksum, &mut spans)
                    && self.options.decode
                {
                    to_decode.push(ToDecode {
                        id,
                        frame: k,
                        loc: fi.loc,
                        jpeg,
                    });
                }
            }
            if let Some(track) = item.audio_track() {
                self.check_audio(reader, id, track, &mut spans);
            }
            self.check_times(id, item);
            if !self.options.decode {
                (self.progress)(item.frame_info.len() as u64);
            }
        }
        self.check_overlaps(&mut spans);

        // gulpio2's check 3, done right: the data file ends where the last
        // record (by position, not by meta order) ends.
        let extent = spans.iter().map(|s| s.end).max().unwrap_or(0);
        let records = meta.n_frames()
            + meta
                .iter()
                .filter(|(_, i)| i.audio_track().is_some())
                .count();
        if data_len > extent && spans.len() == records {
            let problem = Problem {
                kind: ProblemKind::SizeMismatch,
                file: self.data_path.to_owned(),
                id: None,
                frame: None,
                offset: Some(extent),
                message: format!(
                    "{} bytes after the last record, which ends at byte {extent} (file is {data_len} bytes)",
                    data_len - extent
                ),
            };
            self.push(problem);
        }
        if self.options.decode {
            self.decode(&to_decode);
        }
    }

    /// Checks one record; returns its JPEG bytes if nothing is wrong with it.
    fn check_record<'m>(
        &mut self,
        reader: &'m ChunkReader,
        id: &'m str,
        k: usize,
        fi: &FrameInfo,
        checksum: Option<u32>,
        spans: &mut Vec<Span<'m>>,
    ) -> Option<Cow<'m, [u8]>> {
        let data_path = self.data_path;
        let at = |kind, message: String| Problem::frame(kind, data_path, id, k, fi.loc, message);
        if let Some(problem) = fi.problem() {
            self.push(at(
                ProblemKind::BadFrameInfo,
                format!(
                    "frame_info [{}, {}, {}]: {problem}",
                    fi.loc, fi.pad, fi.length
                ),
            ));
            return None;
        }
        let end = fi.end()?;
        if end > reader.data_len() {
            self.push(at(
                ProblemKind::OutOfBounds,
                format!(
                    "record ends at byte {end}, past the end of the data file ({} bytes)",
                    reader.data_len()
                ),
            ));
            return None;
        }
        spans.push(Span {
            start: fi.loc,
            end,
            id,
            frame: Some(k),
        });
        // The whole record, pad included: a record is a multiple of 4 bytes,
        // so it reads as a pad-less frame.
        let whole = FrameInfo {
            loc: fi.loc,
            pad: 0,
            length: fi.length,
        };
        let record = match reader.read(id, k, &whole) {
            Ok(record) => record,
            Err(e) => {
                self.push(at(ProblemKind::DataUnreadable, e.to_string()));
                return None;
            }
        };
        let jpeg_len = usize::try_from(fi.jpeg_len()?).ok()?;
        let mut ok = true;
        if let Some(i) = record[jpeg_len..].iter().position(|&b| b != PAD_BYTE) {
            let byte = record[jpeg_len + i];
            self.push(at(
                ProblemKind::PadNotZero,
                format!(
                    "pad byte at {} is {byte:#04x}, not 0x00",
                    fi.loc + (jpeg_len + i) as u64
                ),
            ));
            ok = false;
        }
        let jpeg = &record[..jpeg_len];
        ok &= self.check_markers(at, jpeg, fi.loc);
        if let Some(stored) = checksum {
            let computed = crc32fast::hash(jpeg);
            if computed != stored {
                self.push(at(
                    ProblemKind::Checksum,
                    format!(
                        "CRC-32 of the frame is {computed:#010x}, the meta says {stored:#010x}"
                    ),
                ));
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        Some(match record {
            Cow::Borrowed(bytes) => Cow::Borrowed(&bytes[..jpeg_len]),
            Cow::Owned(mut bytes) => {
                bytes.truncate(jpeg_len);
                Cow::Owned(bytes)
            }
        })
    }

    /// Checks an item's audio record as a frame's: its place, its pad, and
    /// its bytes against the CRC-32 the meta holds (always, in both
    /// formats).
    fn check_audio<'m>(
        &mut self,
        reader: &'m ChunkReader,
        id: &'m str,
        track: &AudioTrack,
        spans: &mut Vec<Span<'m>>,
    ) {
        let fi = track.record;
        let data_path = self.data_path;
        let at = |kind, message: String| Problem {
            kind,
            file: data_path.to_owned(),
            id: Some(id.to_owned()),
            frame: None,
            offset: Some(fi.loc),
            message,
        };
        // The record rules and the length were checked when the meta was
        // read (format.md §8.2).
        let Some(end) = fi.end().filter(|&e| e <= reader.data_len()) else {
            self.push(at(
                ProblemKind::OutOfBounds,
                format!(
                    "audio record ends past the end of the data file ({} bytes)",
                    reader.data_len()
                ),
            ));
            return;
        };
        spans.push(Span {
            start: fi.loc,
            end,
            id,
            frame: None,
        });
        let whole = FrameInfo {
            loc: fi.loc,
            pad: 0,
            length: fi.length,
        };
        let record = match reader.read(id, crate::AUDIO_RECORD, &whole) {
            Ok(record) => record,
            Err(e) => {
                self.push(at(ProblemKind::DataUnreadable, e.to_string()));
                return;
            }
        };
        let len = usize::try_from(fi.jpeg_len().unwrap_or(0)).unwrap_or(usize::MAX);
        let (samples, pad) = record.split_at(len.min(record.len()));
        if let Some(i) = pad.iter().position(|&b| b != PAD_BYTE) {
            self.push(at(
                ProblemKind::PadNotZero,
                format!(
                    "audio pad byte at {} is {:#04x}, not 0x00",
                    fi.loc + (len + i) as u64,
                    pad[i]
                ),
            ));
        }
        let computed = crc32fast::hash(samples);
        if computed != track.checksum {
            self.push(at(
                ProblemKind::Checksum,
                format!(
                    "CRC-32 of the audio is {computed:#010x}, the meta says {:#010x}",
                    track.checksum
                ),
            ));
        }
    }

    /// Reports frame times outside the item's span, for an item whose meta
    /// says where it was cut from (`start` and `end` in seconds, as a
    /// manifest's clips have): each time must be in `[start, end)`. That
    /// the times are one per frame, finite and increasing was checked when
    /// the meta was read.
    fn check_times(&mut self, id: &str, item: &ItemMeta) {
        let Some(times) = &item.frame_times else {
            return;
        };
        let meta = item.first_meta_data();
        let bound = |key| meta.and_then(|m| m.get(key)).and_then(Value::as_f64);
        let (Some(start), Some(end)) = (bound("start"), bound("end")) else {
            return;
        };
        let n = item.frame_info.len();
        let outside = (0..n).find_map(|k| {
            let t = times.at(k)?;
            (t < start - TIME_SLACK || t >= end - TIME_SLACK).then_some((k, t))
        });
        if let Some((k, t)) = outside {
            let fi = item.frame_info[k];
            self.push(Problem::frame(
                ProblemKind::FrameTimes,
                self.meta_path,
                id,
                k,
                fi.loc,
                format!("frame time {t} s is outside the item's span [{start}, {end}) s"),
            ));
        }
    }

    /// Reports a JPEG that does not start with FFD8 or does not end with
    /// FFD9 (`loc`: its byte offset in the data file); whether both are there.
    fn check_markers(
        &mut self,
        at: impl Fn(ProblemKind, String) -> Problem,
        jpeg: &[u8],
        loc: u64,
    ) -> bool {
        let mut ok = true;
        if !jpeg.starts_with(&JPEG_SOI) {
            self.push(at(
                ProblemKind::JpegStart,
                format!(
                    "frame does not start with the JPEG marker FFD8 (found {})",
                    hex(&jpeg[..jpeg.len().min(2)])
                ),
            ));
            ok = false;
        }
        if !jpeg.ends_with(&JPEG_EOI) {
            let tail = &jpeg[jpeg.len().saturating_sub(2)..];
            self.push(at(
                ProblemKind::JpegEnd,
                format!(
                    "frame does not end with the JPEG marker FFD9 (found {} at byte {})",
                    hex(tail),
                    loc + (jpeg.len() - tail.len()) as u64
                ),
            ));
            ok = false;
        }
        ok
    }

    /// Reports every record that starts before an earlier one (by position)
    /// has ended.
    fn check_overlaps(&mut self, spans: &mut [Span<'_>]) {
        spans.sort_by_key(|s| (s.start, s.end));
        let mut widest: Option<usize> = None;
        for i in 0..spans.len() {
            if let Some(w) = widest {
                let (prev, cur) = (&spans[w], &spans[i]);
                if cur.start < prev.end {
                    let problem = Problem {
                        kind: ProblemKind::Overlap,
                        file: self.data_path.to_owned(),
                        id: Some(cur.id.to_owned()),
                        frame: cur.frame,
                        offset: Some(cur.start),
                        message: format!(
                            "{} record (bytes {}..{}) overlaps id {:?} {} (bytes {}..{})",
                            if cur.frame.is_some() {
                                "frame"
                            } else {
                                "audio"
                            },
                            cur.start,
                            cur.end,
                            prev.id,
                            record_name(prev.frame),
                            prev.start,
                            prev.end
                        ),
                    };
                    self.push(problem);
                }
                if cur.end <= prev.end {
                    continue;
                }
            }
            widest = Some(i);
        }
    }

    fn decode(&mut self, frames: &[ToDecode<'_>]) {
        let threads = self.options.threads.max(1);
        for batch in frames.chunks(threads * DECODE_BATCH_PER_THREAD) {
            let jpegs: Vec<&[u8]> = batch.iter().map(|f| &*f.jpeg).collect();
            let results = decode_batch(&jpegs, &GuardedDecoder, threads);
            for (frame, result) in batch.iter().zip(results) {
                match result {
                    Ok(_) => self.report.decoded += 1,
                    Err(e) => {
                        let problem = Problem::frame(
                            ProblemKind::Decode,
                            self.data_path,
                            frame.id,
                            frame.frame,
                            frame.loc,
                            e.to_string(),
                        );
                        self.push(problem);
                    }
                }
            }
            (self.progress)(batch.len() as u64);
        }
    }
}

/// The built-in decoder, with a panic inside the decoder turned into an
/// error: a checker must survive the inputs it exists to find.
struct GuardedDecoder;

impl FrameDecoder for GuardedDecoder {
    fn decode(&self, jpeg: &[u8]) -> gulp_codec::Result<Image> {
        catch_unwind(AssertUnwindSafe(|| decode_jpeg(jpeg, ColorMode::Auto))).unwrap_or_else(|_| {
            Err(gulp_codec::Error::Decode {
                reason: "the decoder panicked".into(),
            })
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "nothing".into();
    }
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gulpio2_globs() {
        for name in ["data_01.gulp", "database.gulp", "meta_x.gmeta", "data.gulp"] {
            assert!(globbed_by_gulpio2(name), "{name}");
        }
        for name in ["label2idx.json", "data_1.gulp.bak", "meta_1.gulp", "gulp"] {
            assert!(!globbed_by_gulpio2(name), "{name}");
        }
    }

    #[test]
    fn problem_display_names_everything() {
        let p = Problem::frame(
            ProblemKind::JpegEnd,
            Path::new("d/data_0.gulp"),
            "a",
            2,
            632,
            "bad",
        );
        assert_eq!(
            p.to_string(),
            r#"d/data_0.gulp: id "a" frame 2 at byte 632: bad"#
        );
    }
}
