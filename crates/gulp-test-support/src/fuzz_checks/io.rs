//! The checks of the gulp-io fuzz targets `chunk_read`, `random_ops` and
//! `jpeg_decode` (docs/fuzzing.md), and the seeds they start from.
//!
//! The chunk checks work on real files in a scratch directory under the
//! system temporary directory (or `$GULP_FUZZ_TMP`), removed afterwards; the
//! JPEG check works in memory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use gulp_codec::{
    Codec, ColorMode, Crop, Dct, DecodeOptions, MAX_DECODE_PIXELS, Scale, Upsampling,
    decode_jpeg_into, decode_jpeg_with, read_header,
};
use gulp_format::{
    ChunkFile, ChunkMeta, FrameInfo, MetaFormat, TEMP_PREFIX, Value, parse_chunk_file_name,
    read_meta,
};
use gulp_io::{
    ChunkReader, ChunkWriter, DirectoryWarning, Error, ErrorKind, GulpDirectory, ReadMode,
    Selection,
};

use crate::trailer::{seal, unseal};

/// A fresh, empty directory, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new empty directory whose name contains `tag`.
    pub fn new(tag: &str) -> Scratch {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = std::env::var_os("GULP_FUZZ_TMP").map_or_else(std::env::temp_dir, PathBuf::from);
        let path = base.join(format!("gulp-fuzz-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Scratch(path)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads fuzzer bytes one at a time; 0 once they run out.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn more(&self) -> bool {
        self.pos < self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
}

// ---------------------------------------------------------------- chunk_read

/// The chunk pair a `chunk_read` input stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkPair {
    /// Bytes of `meta_0.gmeta`.
    pub meta: Vec<u8>,
    /// Bytes of `data_0.gulp`.
    pub data: Vec<u8>,
}

/// Splits a `chunk_read` input into a chunk pair.
///
/// Layout: `mode: u8`, `meta_len: u16 LE`, `meta_len` bytes of meta source,
/// the rest is the data file. `mode % 4` says what the meta source is:
///
/// * 0: the meta file as it is (JSON, msgpack or garbage);
/// * 1: the content of a msgpack meta file, to which a correct trailer is
///   added, so that mutations get past the fingerprint;
/// * 2 and 3: a description of frames (see [`structured_meta`]) written as
///   JSON (2) or msgpack (3), which reaches the reader's record checks with
///   valid meta every time.
pub fn chunk_pair(input: &[u8]) -> ChunkPair {
    let mut b = Bytes {
        data: input,
        pos: 0,
    };
    let mode = b.u8() % 4;
    let meta_len = usize::from(b.u16());
    let start = b.pos.min(input.len());
    let end = start.saturating_add(meta_len).min(input.len());
    let source = &input[start..end];
    let data = input[end..].to_vec();
    let meta = match mode {
        0 => source.to_vec(),
        1 => seal(source.to_vec()),
        2 => write(&structured_meta(source), MetaFormat::Json),
        _ => write(&structured_meta(source), MetaFormat::Msgpack),
    };
    ChunkPair { meta, data }
}

fn write(meta: &ChunkMeta, format: MetaFormat) -> Vec<u8> {
    format
        .serializer()
        .to_vec(meta)
        .unwrap_or_else(|e| panic!("a small meta must serialise: {e}"))
}

/// A meta built from bytes: repeatedly an item byte `h` (id `"i{h / 8 % 4}"`,
/// `h % 8 % 5` frames; repeated ids merge as in GulpIO), then per frame
/// `loc: u16 LE` (0xffff stands for 2^64 − 4), `pad: u8 % 5` and `length: u8`
/// (0xff stands for 2^63).
pub fn structured_meta(source: &[u8]) -> ChunkMeta {
    let mut b = Bytes {
        data: source,
        pos: 0,
    };
    let mut meta = ChunkMeta::new();
    while b.more() {
        let h = b.u8();
        let id = format!("i{}", h / 8 % 4);
        let n = h % 8 % 5;
        let frames: Vec<FrameInfo> = (0..n)
            .map(|_| {
                let loc = match b.u16() {
                    0xffff => u64::MAX - 3,
                    v => u64::from(v),
                };
                let pad = u64::from(b.u8() % 5);
                let length = match b.u8() {
                    0xff => 1 << 63,
                    v => u64::from(v),
                };
                FrameInfo { loc, pad, length }
            })
            .collect();
        meta.append(&id, Value::Int(i64::from(h)), frames);
    }
    meta
}

/// What reading a frame must give: the JPEG byte range, or `None` if the
/// record breaks a rule of `docs/format.md` §7.2.
fn expected_range(fi: &FrameInfo, data_len: usize) -> Option<std::ops::Range<usize>> {
    if fi.problem().is_some() {
        return None;
    }
    let end = usize::try_from(fi.end()?).ok()?;
    if end > data_len {
        return None;
    }
    let start = usize::try_from(fi.loc).ok()?;
    let jpeg_end = start + usize::try_from(fi.jpeg_len()?).ok()?;
    Some(start..jpeg_end)
}

/// The `chunk_read` check: the pair is written as chunk 0 of a directory and
/// opened with [`GulpDirectory`] and [`ChunkReader`] in both read modes. The
/// meta opens exactly when `read_meta` accepts it, to the same meta; every
/// frame of every item reads exactly when its record is valid and inside the
/// data file, and then gives `data[loc .. loc + length - pad]`; errors name
/// the file and, for records, the id, frame and offset. Never a panic.
pub fn check_chunk_read(input: &[u8]) {
    let pair = chunk_pair(input);
    let dir = Scratch::new("chunk_read");
    let meta_path = dir.path().join("meta_0.gmeta");
    let data_path = dir.path().join("data_0.gulp");
    std::fs::write(&meta_path, &pair.meta).unwrap_or_else(|e| panic!("writing: {e}"));
    std::fs::write(&data_path, &pair.data).unwrap_or_else(|e| panic!("writing: {e}"));
    let parsed = read_meta(&pair.meta);
    for mode in [ReadMode::Mmap, ReadMode::Buffered] {
        // Through the directory: an error may surface when it opens or when
        // the chunk is first used.
        let reader = GulpDirectory::open_with(dir.path(), mode).and_then(|gulp| {
            assert_eq!(gulp.chunks().len(), 1);
            let reader = gulp.reader(0)?;
            check_reader(reader, &parsed, &pair.data, &data_path);
            if let Ok(meta) = &parsed {
                for (id, item) in meta {
                    let all = gulp.frames(id, &Selection::All);
                    let valid = item
                        .frame_info
                        .iter()
                        .all(|fi| expected_range(fi, pair.data.len()).is_some());
                    assert_eq!(all.is_ok(), valid, "id {id:?}: {all:?}");
                }
            }
            Ok(())
        });
        check_meta_outcome(reader, &parsed, &meta_path);
        // A ChunkReader on its own.
        let reader = ChunkReader::open(dir.path(), 0, mode).map(|reader| {
            check_reader(&reader, &parsed, &pair.data, &data_path);
        });
        check_meta_outcome(reader, &parsed, &meta_path);
    }
}

/// An open/first-use result agrees with `read_meta`: success with valid meta,
/// an error naming the meta file otherwise.
fn check_meta_outcome(
    outcome: Result<(), Error>,
    parsed: &gulp_format::Result<ChunkMeta>,
    meta_path: &Path,
) {
    match (outcome, parsed) {
        (Ok(()), Ok(_)) => {}
        (Ok(()), Err(e)) => panic!("meta that read_meta rejects ({e}) was accepted"),
        (Err(e), Ok(_)) => panic!("valid meta, but: {e}"),
        (Err(e), Err(_)) => {
            let ErrorKind::Meta { path, .. } = e.kind() else {
                panic!("expected a meta error, got {e}")
            };
            assert_eq!(path, meta_path);
            assert!(e.to_string().contains("meta_0.gmeta"), "{e}");
        }
    }
}

fn check_reader(
    reader: &ChunkReader,
    parsed: &gulp_format::Result<ChunkMeta>,
    data: &[u8],
    data_path: &Path,
) {
    let Ok(meta) = parsed else {
        panic!("a reader opened on meta that read_meta rejects")
    };
    assert_eq!(reader.meta(), meta);
    assert_eq!(reader.data_len(), data.len() as u64);
    for (id, item) in meta {
        for (k, fi) in item.frame_info.iter().enumerate() {
            match (reader.frame(id, k), expected_range(fi, data.len())) {
                (Ok(got), Some(range)) => assert_eq!(&*got, &data[range], "id {id:?} frame {k}"),
                (Err(e), None) => {
                    let ErrorKind::Record {
                        path,
                        id: eid,
                        frame,
                        offset,
                        ..
                    } = e.kind()
                    else {
                        panic!("expected a record error, got {e}")
                    };
                    assert_eq!((path.as_path(), eid.as_str()), (data_path, id.as_str()));
                    assert_eq!((*frame, *offset), (k, fi.loc));
                    assert!(e.to_string().contains("data_0.gulp"), "{e}");
                }
                (Ok(_), None) => panic!("id {id:?} frame {k} {fi:?} read although invalid"),
                (Err(e), Some(_)) => panic!("id {id:?} frame {k} {fi:?}: {e}"),
            }
        }
        // Past the last frame is a selection error, not a panic.
        assert!(reader.frame(id, item.frame_info.len()).is_err());
    }
}

/// Seeds for `chunk_read`: valid chunk pairs in each input mode.
pub fn chunk_read_seeds() -> Vec<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut meta = ChunkMeta::new();
    for (k, len) in [5usize, 8, 1, 0, 11].into_iter().enumerate() {
        let jpeg: Vec<u8> = (0..len).map(|i| (i * 37 + k) as u8).collect();
        let fi = FrameInfo::for_jpeg(data.len() as u64, len as u64);
        data.extend_from_slice(&jpeg);
        data.resize(data.len() + (fi.pad as usize), 0);
        let id = ["a", "b", "a", "c", "b"][k];
        meta.append(id, Value::from(format!("label {k}")), [fi]);
    }
    let mut seeds = Vec::new();
    let mut push = |name: &str, mode: u8, source: &[u8], data: &[u8]| {
        let mut input = vec![mode];
        input.extend_from_slice(&(source.len() as u16).to_le_bytes());
        input.extend_from_slice(source);
        input.extend_from_slice(data);
        seeds.push((name.to_owned(), input));
    };
    let json = write(&meta, MetaFormat::Json);
    let packed = write(&meta, MetaFormat::Msgpack);
    push("json.raw", 0, &json, &data);
    push("msgpack.raw", 0, &packed, &data);
    push("msgpack.content", 1, unseal(&packed), &data);
    push("empty.raw", 0, b"{}", &[]);
    // Structured: item "i0" with two frames (one past the end of the data),
    // item "i1" with one.
    let structured = [2u8, 0, 0, 0, 8, 32, 0, 1, 4, 1 + 8 * 5, 4, 0, 3, 8];
    push("frames.json", 2, &structured, &data);
    push("frames.msgpack", 3, &structured, &data);
    seeds
}

// ---------------------------------------------------------------- random_ops

/// An item as the model holds it.
#[derive(Debug, Clone, PartialEq)]
struct ModelItem {
    id: String,
    meta_data: Vec<Value>,
    frames: Vec<Vec<u8>>,
}

/// A committed (or pending) chunk as the model holds it.
#[derive(Debug, Clone)]
struct ModelChunk {
    format: MetaFormat,
    items: Vec<ModelItem>,
}

impl ModelChunk {
    fn append(&mut self, id: &str, meta_data: Value, frames: Vec<Vec<u8>>) {
        match self.items.iter_mut().find(|item| item.id == id) {
            Some(item) => {
                item.meta_data.push(meta_data);
                item.frames.extend(frames);
            }
            None => self.items.push(ModelItem {
                id: id.to_owned(),
                meta_data: vec![meta_data],
                frames,
            }),
        }
    }
}

struct OpenWriter {
    writer: ChunkWriter,
    chunk: u64,
    model: ModelChunk,
}

/// Chunk numbers the operations use.
const CHUNKS: u8 = 4;

fn format_of(b: u8) -> MetaFormat {
    if b & 1 == 0 {
        MetaFormat::Json
    } else {
        MetaFormat::Msgpack
    }
}

/// A `meta_data` value of one of several kinds, from two bytes.
fn value_of(kind: u8, b: u8) -> Value {
    match kind % 7 {
        0 => Value::Null,
        1 => Value::Int(i64::from(b as i8) * 0x0102_0304_0506),
        2 => Value::Float(
            [
                f64::NAN,
                f64::INFINITY,
                -0.0,
                1e-7,
                1e16,
                0.1,
                -2.5,
                f64::MIN_POSITIVE,
            ][usize::from(b % 8)],
        ),
        3 => Value::from(format!("é\"\\{b}\u{1f389}")),
        4 => Value::Array(vec![Value::Int(i64::from(b)), Value::Bool(b & 1 == 1)]),
        5 => [("label", Value::from(u64::from(b) << 56 | 0xff))]
            .into_iter()
            .collect(),
        _ => Value::from(u64::MAX - u64::from(b)),
    }
}

/// Frame bytes: `n` frames of 0..=10 bytes (empty frames included).
fn frames_of(b: &mut Bytes<'_>, n: u8) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let seed = b.u8();
            let len = usize::from(seed % 11);
            (0..len)
                .map(|i| seed.wrapping_mul(31).wrapping_add(i as u8))
                .collect()
        })
        .collect()
}

/// The `random_ops` check: operations decoded from the input are run on a
/// real directory and on a plain in-memory model, and the directory must
/// always agree with the model.
///
/// Each operation is a byte `op`, `op % 8` choosing what, bit 3 choosing one
/// of two writer slots, then operands from the following bytes:
///
/// * 0 `create`: chunk `b % 4`, format `b' & 1` (0 JSON, 1 msgpack). Fails
///   with `ChunkExists` exactly when the chunk is committed;
/// * 1 `append`: id `"v{b % 5}"`, a `meta_data` value, `b % 4` frames of 0 to
///   10 bytes; as in GulpIO, an id appended twice to a chunk merges;
/// * 2 `finish`: commits; the model's chunk is replaced;
/// * 3 drop the writer without `finish`: nothing changes on disk;
/// * 4 and 7 reopen the directory (mmap, buffered) and compare everything;
/// * 5 open chunk `b % 4` with `ChunkReader::open`: fails exactly when the
///   chunk is not committed, and otherwise holds the model's items;
/// * 6 `append_to`: chunk `b % 4`, format `b' & 1`; fails exactly when the
///   chunk is not committed.
///
/// Starting a writer in an occupied slot drops the one there first. Two
/// writers never target the same chunk number at once unless the second one
/// is expected to fail (they would share temporary files); a failing create
/// or append_to must not disturb the other writer. After every reopen the
/// directory holds exactly the committed chunks, with identical ids, frames
/// and meta (duplicate ids across chunks are an error naming the id), msgpack
/// chunks have a correct CRC-32 per frame, and the only other files are the
/// temporary files of open writers, which are never taken for chunks.
pub fn check_random_ops(input: &[u8]) {
    let dir = Scratch::new("random_ops");
    let dir = dir.path();
    let mut b = Bytes {
        data: input,
        pos: 0,
    };
    let mut committed: BTreeMap<u64, ModelChunk> = BTreeMap::new();
    let mut slots: [Option<OpenWriter>; 2] = [None, None];
    let builder = |format: MetaFormat| {
        let mut builder = ChunkWriter::builder();
        builder.meta_format(format).fsync(false);
        builder
    };
    while b.more() {
        let op = b.u8();
        let slot = usize::from(op >> 3 & 1);
        let other = 1 - slot;
        match op % 8 {
            0 | 6 => {
                let chunk = u64::from(b.u8() % CHUNKS);
                let format = format_of(b.u8());
                let exists = committed.contains_key(&chunk);
                let creating = matches!(op % 8, 0);
                let should_fail = if creating { exists } else { !exists };
                let clash = slots[other].as_ref().is_some_and(|w| w.chunk == chunk);
                if clash && !should_fail {
                    continue;
                }
                slots[slot] = None;
                let result = if creating {
                    builder(format).create(dir, chunk)
                } else {
                    builder(format).append_to(dir, chunk)
                };
                match result {
                    Ok(writer) => {
                        assert!(!should_fail, "chunk {chunk}: writer opened, should fail");
                        let mut model = committed.get(&chunk).cloned().unwrap_or(ModelChunk {
                            format,
                            items: Vec::new(),
                        });
                        model.format = format;
                        slots[slot] = Some(OpenWriter {
                            writer,
                            chunk,
                            model,
                        });
                    }
                    Err(e) => {
                        assert!(should_fail, "chunk {chunk}: {e}");
                        if creating {
                            assert!(matches!(e.kind(), ErrorKind::ChunkExists { .. }), "{e}");
                        }
                    }
                }
            }
            1 => {
                let id = format!("v{}", b.u8() % 5);
                let meta_data = value_of(b.u8(), b.u8());
                let n = b.u8() % 4;
                let frames = frames_of(&mut b, n);
                if let Some(open) = slots[slot].as_mut() {
                    open.writer
                        .append(&id, meta_data.clone(), &frames)
                        .unwrap_or_else(|e| panic!("append: {e}"));
                    open.model.append(&id, meta_data, frames);
                }
            }
            2 => {
                if let Some(open) = slots[slot].take() {
                    let summary = open
                        .writer
                        .finish()
                        .unwrap_or_else(|e| panic!("finish chunk {}: {e}", open.chunk));
                    assert_eq!(summary.items, open.model.items.len());
                    committed.insert(open.chunk, open.model);
                }
            }
            3 => slots[slot] = None,
            4 => check_directory(dir, &committed, &slots, ReadMode::Mmap),
            7 => check_directory(dir, &committed, &slots, ReadMode::Buffered),
            _ => {
                let chunk = u64::from(b.u8() % CHUNKS);
                match (
                    ChunkReader::open(dir, chunk, ReadMode::Mmap),
                    committed.get(&chunk),
                ) {
                    (Ok(reader), Some(model)) => check_chunk(&reader, model),
                    (Err(_), None) => {}
                    (Ok(_), None) => panic!("chunk {chunk} opened but was never committed"),
                    (Err(e), Some(_)) => panic!("committed chunk {chunk}: {e}"),
                }
            }
        }
    }
    check_directory(dir, &committed, &slots, ReadMode::Mmap);
    // Dropping the open writers leaves exactly the committed chunks.
    slots = [None, None];
    check_directory(dir, &committed, &slots, ReadMode::Mmap);
}

/// The first id that is in two committed chunks, in chunk order.
fn duplicate_id(committed: &BTreeMap<u64, ModelChunk>) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    committed
        .values()
        .flat_map(|c| &c.items)
        .find(|item| !seen.insert(item.id.as_str()))
        .map(|item| item.id.clone())
}

fn check_directory(
    dir: &Path,
    committed: &BTreeMap<u64, ModelChunk>,
    slots: &[Option<OpenWriter>; 2],
    mode: ReadMode,
) {
    // Files on disk: the committed pairs, and temporary files of open writers.
    let open: Vec<u64> = slots.iter().flatten().map(|w| w.chunk).collect();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("listing: {e}")) {
        let name = entry
            .unwrap_or_else(|e| panic!("listing: {e}"))
            .file_name()
            .into_string()
            .unwrap_or_else(|n| panic!("odd name {n:?}"));
        match parse_chunk_file_name(&name) {
            Some(ChunkFile::Data(n) | ChunkFile::Meta(n)) => {
                assert!(
                    committed.contains_key(&n),
                    "{name} is not a committed chunk"
                );
            }
            None => {
                let rest = name
                    .strip_prefix(TEMP_PREFIX)
                    .unwrap_or_else(|| panic!("unexpected file {name}"));
                match parse_chunk_file_name(rest) {
                    Some(ChunkFile::Data(n) | ChunkFile::Meta(n)) if open.contains(&n) => {}
                    _ => panic!("temporary file {name} without an open writer"),
                }
            }
        }
    }

    let opened = GulpDirectory::open_with(dir, mode);
    if let Some(id) = duplicate_id(committed) {
        // Duplicate ids across chunks: an error naming the id, when the
        // directory opens or, if it opens lazily, when the id is looked up.
        let err = match opened {
            Err(e) => e,
            Ok(gulp) => match gulp.item(&id) {
                Err(e) => e,
                Ok(_) => panic!("duplicate id {id:?} not reported"),
            },
        };
        assert!(
            matches!(err.kind(), ErrorKind::DuplicateId { .. }),
            "expected a duplicate id error: {err}"
        );
        assert!(err.to_string().contains("duplicate id \"v"), "{err}");
        return;
    }
    let gulp = opened.unwrap_or_else(|e| panic!("directory does not open: {e}"));
    let numbers: Vec<u64> = gulp.chunks().iter().map(|c| c.chunk).collect();
    assert_eq!(numbers, committed.keys().copied().collect::<Vec<_>>());
    for warning in gulp.warnings() {
        match warning {
            DirectoryWarning::TempFile(_) => assert!(!open.is_empty(), "{warning}"),
            other => panic!("unexpected warning: {other}"),
        }
    }
    let total: usize = committed.values().map(|c| c.items.len()).sum();
    assert_eq!(gulp.len(), total);
    let expected_next = committed.keys().next_back().map_or(0, |n| n + 1);
    assert_eq!(gulp.next_chunk_number(), expected_next);
    for (index, model) in committed.values().enumerate() {
        let reader = gulp
            .reader(index)
            .unwrap_or_else(|e| panic!("chunk at {index}: {e}"));
        check_chunk(reader, model);
        for item in &model.items {
            let frames = gulp
                .frames(&item.id, &Selection::All)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(
                frames
                    .iter()
                    .map(|f| &**f)
                    .eq(item.frames.iter().map(|f| &f[..]))
            );
            assert_eq!(
                gulp.item(&item.id).map(|m| m.meta_data.as_slice()).ok(),
                Some(item.meta_data.as_slice())
            );
        }
    }
}

/// A committed chunk holds exactly the model's items, frames and meta; with
/// msgpack meta, every frame has its CRC-32.
fn check_chunk(reader: &ChunkReader, model: &ModelChunk) {
    let meta = reader.meta();
    assert_eq!(
        meta.ids().collect::<Vec<_>>(),
        model
            .items
            .iter()
            .map(|i| i.id.as_str())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        MetaFormat::detect(&std::fs::read(reader.meta_path()).unwrap_or_default()),
        Some(model.format)
    );
    for item in &model.items {
        let stored = reader.item(&item.id).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored.meta_data, item.meta_data, "id {:?}", item.id);
        let frames = reader
            .frames(&item.id, &Selection::All)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(frames.len(), item.frames.len());
        for (k, (got, want)) in frames.iter().zip(&item.frames).enumerate() {
            assert_eq!(&**got, &want[..], "id {:?} frame {k}", item.id);
        }
        let crcs: Vec<u32> = item.frames.iter().map(|f| crc32fast::hash(f)).collect();
        match model.format {
            MetaFormat::Msgpack => assert_eq!(stored.frame_checksums, crcs),
            _ => assert!(stored.frame_checksums.is_empty()),
        }
    }
}

/// Seeds for `random_ops`: short scripts that create, fill, finish, drop,
/// append to and reopen chunks.
pub fn random_ops_seeds() -> Vec<(String, Vec<u8>)> {
    let create = |slot: u8, chunk: u8, format: u8| [8 * slot, chunk, format];
    let append = |slot: u8, id: u8| [1 + 8 * slot, id, id + 1, id * 3, 3, 4, 5, 9];
    let mut seeds = Vec::new();
    // JSON chunk 0 with two items (one appended twice), finished, reopened.
    let mut s = Vec::new();
    s.extend(create(0, 0, 0));
    s.extend(append(0, 0));
    s.extend(append(0, 1));
    s.extend(append(0, 0));
    s.extend([2, 4, 5, 0, 7]);
    seeds.push(("json_chunk".to_owned(), s.clone()));
    // Then msgpack chunk 1 in slot 1 while slot 0 appends to chunk 0 as
    // msgpack; one is finished, the other dropped.
    s.extend(create(1, 1, 1));
    s.extend(append(1, 2));
    s.extend([6, 0, 1]);
    s.extend(append(0, 3));
    s.extend([4, 2 + 8, 4, 3, 4, 5, 1]);
    seeds.push(("two_writers".to_owned(), s.clone()));
    // A duplicate id across chunks, then a failing create on a committed chunk.
    s.extend(create(0, 2, 0));
    s.extend(append(0, 2));
    s.extend([2, 4]);
    s.extend(create(1, 2, 1));
    s.extend([4]);
    seeds.push(("duplicate".to_owned(), s));
    seeds
}

// --------------------------------------------------------------- jpeg_decode

/// The option bytes in front of the JPEG in a `jpeg_decode` input.
pub const JPEG_OPTION_BYTES: usize = 9;

/// Frames whose stored size is above this many pixels (but within
/// [`MAX_DECODE_PIXELS`]) get only the cheap checks, so that every input
/// runs in milliseconds: a few hundred bytes can claim 8192 × 8192 pixels.
pub const JPEG_CHECK_PIXELS: usize = 1 << 18;

/// Output bytes past the expected shape, which no decode may touch: as many
/// again as the shape, and a little more.
fn slack(len: usize) -> usize {
    len + 61
}

/// A small real JPEG (24 × 16 colour noise), decoded after every failure
/// and compared with its pixels from a fresh thread: a decoder handle left
/// in a bad state by the failure would show here.
const KNOWN_GOOD: &[u8] = include_bytes!("../../../gulp-io/tests/data/noise-24x16.jpg");

/// Splits a `jpeg_decode` input into options, crop bytes and the JPEG.
///
/// Layout (missing bytes read as 0): byte 0 holds flags: bit 0 zune-jpeg
/// (else the default codec: libjpeg-turbo when built in), bit 1 accurate
/// DCT, bit 2 smooth upsampling, bit 3 not strict, bit 4 crop; byte 1 the
/// colour mode (`% 3`: auto, RGB, gray); byte 2 the scale (`% 4`: full,
/// `Eighths(a % 10)` (0 and 9 test the clamping), `ShortEdge(a)`,
/// `AtLeast { width: a, height: b }`) with `a`, `b` bytes 3 and 4; bytes
/// 5–8 the crop (see [`jpeg_crop`]); then the JPEG.
pub fn jpeg_options(input: &[u8]) -> (DecodeOptions, Option<[u8; 4]>, &[u8]) {
    let mut head = [0u8; JPEG_OPTION_BYTES];
    let n = input.len().min(JPEG_OPTION_BYTES);
    head[..n].copy_from_slice(&input[..n]);
    let [flags, color, scale, a, b, c0, c1, c2, c3] = head;
    let options = DecodeOptions {
        codec: if flags & 1 == 0 {
            Codec::default()
        } else {
            Codec::Zune
        },
        color: [ColorMode::Auto, ColorMode::Rgb, ColorMode::Gray][usize::from(color % 3)],
        dct: if flags & 2 == 0 {
            Dct::Fast
        } else {
            Dct::Accurate
        },
        upsampling: if flags & 4 == 0 {
            Upsampling::Fast
        } else {
            Upsampling::Smooth
        },
        strict: flags & 8 == 0,
        scale: match scale % 4 {
            0 => Scale::Full,
            1 => Scale::Eighths(a % 10),
            2 => Scale::ShortEdge(usize::from(a)),
            _ => Scale::AtLeast {
                width: usize::from(a),
                height: usize::from(b),
            },
        },
        crop: None,
    };
    let crop = (flags & 16 != 0).then_some([c0, c1, c2, c3]);
    (options, crop, &input[n..])
}

/// The crop of bytes `[x, y, w, h]` in a `width` × `height` image:
/// `x % (width + 1)` (so one past the last column too); a size byte 0 reaches the edge,
/// 1 one past it, anything else is `% (room + 2)`, so zero and too-wide
/// crops come up as well.
pub fn jpeg_crop([x, y, w, h]: [u8; 4], (width, height): (usize, usize)) -> Crop {
    let x = usize::from(x) % (width + 1);
    let y = usize::from(y) % (height + 1);
    let size = |b: u8, room: usize| match b {
        0 => room,
        1 => room + 1,
        _ => usize::from(b) % (room + 2),
    };
    Crop {
        x,
        y,
        width: size(w, width - x),
        height: size(h, height - y),
    }
}

/// The `jpeg_decode` check: decodes the JPEG with the options of the input
/// (see [`jpeg_options`]) into a buffer and into a new image. Never a panic;
/// every failure is a `Decode` error; a success returns
/// `read_header(..).output_shape(&options)`, writes exactly that many
/// bytes (nothing past them), agrees with `decode_jpeg_with` and with a
/// second decode into a buffer of other contents, byte for byte; a crop
/// equals the same window of the uncropped decode at the same scale (with
/// fast upsampling, or zune-jpeg); a frame
/// over [`MAX_DECODE_PIXELS`] is refused before anything is allocated for
/// it; after any failure a known-good JPEG still decodes to its pixels.
pub fn check_jpeg_decode(input: &[u8]) {
    let (mut options, crop, jpeg) = jpeg_options(input);
    let header = read_header(jpeg, options.codec);
    options.crop = crop.map(|bytes| match &header {
        Ok(h) => jpeg_crop(bytes, h.scaled_size(&options)),
        Err(_) => jpeg_crop(bytes, (64, 64)),
    });
    // An empty buffer never fits: refused without writing.
    let refused = decode_jpeg_into(jpeg, &options, &mut []);
    expect_decode_error(&refused, &options, "into an empty buffer");
    let header = match header {
        Ok(h) => h,
        Err(e) => {
            assert_decode_error(&e, "read_header");
            // What has no readable header does not decode.
            let with = decode_jpeg_with(jpeg, &options);
            expect_decode_error(&with, &options, "without a header");
            return;
        }
    };
    // libjpeg-turbo's header read refuses these itself; zune-jpeg's does not.
    if header.width.saturating_mul(header.height) > MAX_DECODE_PIXELS {
        // Refused before the allocation (a global allocator in the fuzz
        // crate aborts on any single allocation this large).
        let with = decode_jpeg_with(jpeg, &options);
        expect_decode_error(&with, &options, "over the pixel limit");
        return;
    }
    if header.width.saturating_mul(header.height) > JPEG_CHECK_PIXELS {
        return;
    }
    let expected = header.output_shape(&options);
    let mut out = vec![0xa5; expected.len() + slack(expected.len())];
    let into = decode_jpeg_into(jpeg, &options, &mut out);
    let with = decode_jpeg_with(jpeg, &options);
    let shape = match into {
        Ok(shape) => shape,
        Err(e) => {
            assert_decode_error(&e, "decode_jpeg_into");
            after_failure(&options);
            assert!(
                with.is_err(),
                "decode_jpeg_with succeeds where decode_jpeg_into fails ({e}) with {options:?}"
            );
            return;
        }
    };
    assert_eq!(shape, expected, "shape of {options:?}");
    assert!(
        out[shape.len()..].iter().all(|&b| b == 0xa5),
        "{options:?}: bytes written past the {shape:?} returned"
    );
    let image = with.unwrap_or_else(|e| {
        panic!("decode_jpeg_into succeeds, decode_jpeg_with fails with {options:?}: {e}")
    });
    assert_eq!(
        (image.height, image.width, image.channels),
        (shape.height, shape.width, shape.channels)
    );
    assert!(
        image.pixels == out[..shape.len()],
        "decode_jpeg_with differs, {options:?}"
    );
    // Again, into a buffer of other contents: the same bytes, every one written.
    let mut again = vec![0x5a; expected.len()];
    let second = decode_jpeg_into(jpeg, &options, &mut again)
        .unwrap_or_else(|e| panic!("a second decode fails with {options:?}: {e}"));
    assert_eq!(second, shape);
    assert!(
        again == out[..shape.len()],
        "a second decode differs, {options:?}"
    );
    // A crop is exactly the window of the uncropped decode, whatever the
    // upsampling (smooth upsampling of subsampled chroma is cut from the
    // whole frame).
    if let Some(crop) = options.crop {
        let whole = DecodeOptions {
            crop: None,
            ..options
        };
        if let Ok(full) = decode_jpeg_with(jpeg, &whole) {
            let row = crop.width * shape.channels;
            for r in 0..crop.height {
                let start = ((crop.y + r) * full.width + crop.x) * shape.channels;
                assert!(
                    full.pixels[start..start + row] == out[r * row..(r + 1) * row],
                    "{options:?}: row {r} of the crop differs from the uncropped decode"
                );
            }
        } else {
            after_failure(&whole);
        }
    }
}

fn assert_decode_error(e: &gulp_codec::Error, what: &str) {
    assert!(
        matches!(e, gulp_codec::Error::Decode { .. }),
        "{what}: not a decode error: {e}"
    );
}

/// `result` is a `Decode` error; then the known-good JPEG still decodes.
fn expect_decode_error<T: std::fmt::Debug>(
    result: &Result<T, gulp_codec::Error>,
    options: &DecodeOptions,
    what: &str,
) {
    match result {
        Ok(v) => panic!("{what}: decoded with {options:?}: {v:?}"),
        Err(e) => assert_decode_error(e, what),
    }
    after_failure(options);
}

/// The known-good JPEG's pixels with the default options of each codec,
/// decoded on a thread of their own (fresh decoder handles); `None` where
/// the codec is not built in.
fn known_good(codec: Codec) -> Option<&'static [u8]> {
    static PIXELS: OnceLock<[Option<Vec<u8>>; 2]> = OnceLock::new();
    let pixels = PIXELS.get_or_init(|| {
        std::thread::spawn(|| {
            [Codec::LibjpegTurbo, Codec::Zune].map(|codec| {
                let options = DecodeOptions {
                    codec,
                    ..DecodeOptions::default()
                };
                decode_jpeg_with(KNOWN_GOOD, &options)
                    .ok()
                    .map(|i| i.pixels)
            })
        })
        .join()
        .expect("decoding the known-good JPEG panicked")
    });
    pixels[usize::from(codec == Codec::Zune)].as_deref()
}

/// After a failure, the same thread decodes the known-good JPEG as before.
fn after_failure(options: &DecodeOptions) {
    let reference = known_good(options.codec);
    let options = DecodeOptions {
        codec: options.codec,
        ..DecodeOptions::default()
    };
    let now = decode_jpeg_with(KNOWN_GOOD, &options).ok();
    assert!(
        now.as_ref().map(|i| i.pixels.as_slice()) == reference,
        "after a failure, the known-good JPEG decodes differently with {:?}",
        options.codec
    );
}

/// `jpeg_decode` inputs for a JPEG: a few option prefixes each (default;
/// zune-jpeg; half size with a crop off the iMCU grid; gray, smooth,
/// accurate; not strict, 3/8 with a crop; short edge; at least).
pub fn jpeg_decode_inputs(name: &str, jpeg: &[u8]) -> Vec<(String, Vec<u8>)> {
    let prefixes: [(&str, [u8; JPEG_OPTION_BYTES]); 7] = [
        ("default", [0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ("zune-crop", [1 | 16, 1, 0, 0, 0, 3, 2, 9, 5]),
        ("half-crop", [16, 0, 1, 4, 0, 5, 1, 7, 0]),
        ("gray-smooth", [2 | 4, 2, 0, 0, 0, 0, 0, 0, 0]),
        ("lenient-crop", [8 | 16 | 4, 1, 1, 3, 0, 1, 3, 0, 4]),
        ("short-edge", [0, 0, 2, 6, 0, 0, 0, 0, 0]),
        ("at-least", [16 | 4, 0, 3, 10, 3, 2, 0, 0, 0]),
    ];
    prefixes
        .iter()
        .map(|(tag, prefix)| {
            let mut input = prefix.to_vec();
            input.extend_from_slice(jpeg);
            (format!("{name}.{tag}"), input)
        })
        .collect()
}
