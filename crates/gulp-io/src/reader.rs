//! Reading one chunk: frames as slices of a memory map.

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gulp_codec::{
    Codec, DecodeOptions, FrameDecoder, Image, JpegFrame, Shape, check_size, decode_jpeg_into,
};
use gulp_format::{ChunkMeta, FrameInfo, ItemMeta, data_file_name, meta_file_name, read_meta};
use memmap2::Mmap;

use crate::error::{Error, ErrorKind, Result};
use crate::select::Selection;
use gulp_store::cache::{Cached, ObjectId, RangeStore};
use gulp_store::{CachedStore, Store, StoredFile};

/// Reads and parses a meta file of either format, naming it on error.
pub(crate) fn load_meta(meta_path: &Path) -> Result<ChunkMeta> {
    load_meta_from(&StoredFile::plain(meta_path.to_owned()))
}

/// [`load_meta`] from a file that may be an object read through the node
/// cache.
pub(crate) fn load_meta_from(meta: &StoredFile) -> Result<ChunkMeta> {
    let bytes = meta.read()?;
    read_meta(&bytes).map_err(|source| {
        ErrorKind::Meta {
            path: meta.path.clone(),
            source,
        }
        .into()
    })
}

/// How a [`ChunkReader`] gets at the data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Memory-map it, falling back to plain reads if mapping fails.
    #[default]
    Mmap,
    /// Plain positioned reads into owned buffers.
    Buffered,
}

enum Data {
    Mapped(Mmap),
    File(Mutex<File>),
    /// An object in an object store: frames are range requests, through
    /// the node cache's ranges of the object when there is one.
    Remote {
        store: &'static dyn Store,
        cached: Option<CachedRanges>,
    },
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Data::Mapped(map) => f.debug_tuple("Mapped").field(&map.len()).finish(),
            Data::File(file) => f.debug_tuple("File").field(file).finish(),
            Data::Remote { cached, .. } => {
                f.debug_struct("Remote").field("cached", cached).finish()
            }
        }
    }
}

/// An object's byte ranges read through the node cache.
#[derive(Debug)]
struct CachedRanges {
    /// The ranges of the object the cache keeps.
    ranges: Arc<RangeStore>,
    /// The cache over the object's store: what fetches the ranges missing.
    via: Arc<CachedStore>,
    /// The version of the object read (the listing's).
    version: ObjectId,
}

/// One chunk opened for reading: its meta, and its data file mapped.
#[derive(Debug)]
pub struct ChunkReader {
    chunk: u64,
    data_path: PathBuf,
    meta_path: PathBuf,
    meta: Arc<ChunkMeta>,
    data: Data,
    data_len: u64,
    /// The node cache's entry the data is read from, in use (so never
    /// evicted) while this reader lives.
    _cached: Option<Cached>,
}

impl ChunkReader {
    /// Opens chunk `chunk` of `dir` (`data_N.gulp` and `meta_N.gmeta`).
    pub fn open(dir: impl AsRef<Path>, chunk: u64, mode: ReadMode) -> Result<ChunkReader> {
        let dir = dir.as_ref();
        let meta_path = dir.join(meta_file_name(chunk));
        let meta = load_meta(&meta_path)?;
        ChunkReader::with_meta(
            dir.join(data_file_name(chunk)),
            meta_path,
            chunk,
            Arc::new(meta),
            mode,
        )
    }

    /// Opens a data file whose meta is already parsed.
    pub fn with_meta(
        data_path: PathBuf,
        meta_path: PathBuf,
        chunk: u64,
        meta: Arc<ChunkMeta>,
        mode: ReadMode,
    ) -> Result<ChunkReader> {
        ChunkReader::from_source(&StoredFile::plain(data_path), meta_path, chunk, meta, mode)
    }

    /// Opens the data file `data` (an object is read from the node cache
    /// when the source has one, fetched whole into it first if missing)
    /// whose meta is already parsed.
    pub(crate) fn from_source(
        data: &StoredFile,
        meta_path: PathBuf,
        chunk: u64,
        meta: Arc<ChunkMeta>,
        mode: ReadMode,
    ) -> Result<ChunkReader> {
        let cached = data.cached()?;
        ChunkReader::from_parts(data, cached, meta_path, chunk, meta, mode)
    }

    /// [`from_source`](Self::from_source) with the node cache's entry of an
    /// object already in hand (`None`: read the file, or the store).
    pub(crate) fn from_parts(
        data: &StoredFile,
        cached: Option<Cached>,
        meta_path: PathBuf,
        chunk: u64,
        meta: Arc<ChunkMeta>,
        mode: ReadMode,
    ) -> Result<ChunkReader> {
        let data_path = data.path.clone();
        if cached.is_none() && gulp_store::is_remote(&data_path) {
            let store = gulp_store::store(&data_path)?;
            let data_len = match &data.object {
                Some(listed) => listed.size,
                None => store.len(&data_path)?,
            };
            return Ok(ChunkReader {
                chunk,
                data_path,
                meta_path,
                meta,
                data: Data::Remote {
                    store,
                    cached: None,
                },
                data_len,
                _cached: None,
            });
        }
        let file = match &cached {
            Some(c) => c
                .file
                .try_clone()
                .map_err(|e| Error::io("opening", &c.path, e))?,
            None => File::open(&data_path).map_err(|e| Error::io("opening", &data_path, e))?,
        };
        let data_len = file
            .metadata()
            .map_err(|e| Error::io("reading", &data_path, e))?
            .len();
        let data = match mode {
            ReadMode::Mmap => match crate::mmap::map(&file, data_len) {
                Some(map) => Data::Mapped(map),
                None => Data::File(Mutex::new(file)),
            },
            ReadMode::Buffered => Data::File(Mutex::new(file)),
        };
        Ok(ChunkReader {
            chunk,
            data_path,
            meta_path,
            meta,
            data,
            data_len,
            _cached: cached,
        })
    }

    /// A reader of the object `data` that reads the byte ranges it is
    /// asked for through the node cache's `ranges` of it: from the cache
    /// where it holds them, else from the store, keeping them.
    pub(crate) fn from_ranges(
        data: &StoredFile,
        ranges: Arc<RangeStore>,
        meta_path: PathBuf,
        chunk: u64,
        meta: Arc<ChunkMeta>,
    ) -> Result<ChunkReader> {
        let store = gulp_store::store(&data.path)?;
        // The ranges come from a file with a cache and a listed version;
        // without either, the store is read without the cache.
        let (cached, data_len) = match (&data.cache, &data.object) {
            (Some(via), Some(version)) => (
                Some(CachedRanges {
                    ranges,
                    via: Arc::clone(via),
                    version: version.clone(),
                }),
                version.size,
            ),
            _ => (None, store.len(&data.path)?),
        };
        Ok(ChunkReader {
            chunk,
            data_path: data.path.clone(),
            meta_path,
            meta,
            data: Data::Remote { store, cached },
            data_len,
            _cached: None,
        })
    }

    /// Fetches into the node cache the records `(frame index, frame_info)`
    /// of `id` it does not hold, when this reader reads an object's ranges
    /// through the cache (what a loader does ahead of its decoding
    /// threads); the bytes fetched (0 for any other reader).
    pub fn fetch_records(&self, id: &str, records: &[(usize, FrameInfo)]) -> Result<u64> {
        if let Data::Remote {
            cached: Some(c), ..
        } = &self.data
        {
            let spans = records
                .iter()
                .map(|(k, fi)| self.record_range(id, *k, fi))
                .collect::<Result<Vec<_>>>()?;
            return c
                .ranges
                .fill(&spans, c.via.fetch(&self.data_path, &c.version))
                .map_err(|e| self.locate_remote(e, id));
        }
        let _ = (id, records);
        Ok(0)
    }

    /// Whether the data is read from the node cache.
    pub fn is_cached(&self) -> bool {
        self._cached.is_some()
    }

    /// The chunk number.
    pub fn chunk(&self) -> u64 {
        self.chunk
    }

    /// The chunk's meta.
    pub fn meta(&self) -> &ChunkMeta {
        &self.meta
    }

    /// The data file.
    pub fn data_path(&self) -> &Path {
        &self.data_path
    }

    /// The meta file.
    pub fn meta_path(&self) -> &Path {
        &self.meta_path
    }

    /// Size of the data file in bytes.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// Whether the data file is memory-mapped.
    pub fn is_mapped(&self) -> bool {
        matches!(self.data, Data::Mapped(_))
    }

    /// The whole data file as mapped, or `None` when it is read through a
    /// file handle. Frames are at the ranges [`ChunkReader::jpeg_range`] gives.
    pub fn mapped_bytes(&self) -> Option<&[u8]> {
        match &self.data {
            Data::Mapped(map) => Some(map),
            _ => None,
        }
    }

    /// The item with this id.
    pub fn item(&self, id: &str) -> Result<&ItemMeta> {
        self.meta.get(id).ok_or_else(|| {
            ErrorKind::UnknownId {
                id: id.to_owned(),
                dir: self.meta_path.clone(),
            }
            .into()
        })
    }

    /// The JPEG bytes of frame `index` of `id`: a slice of the map (no copy)
    /// when mapped.
    pub fn frame(&self, id: &str, index: usize) -> Result<Cow<'_, [u8]>> {
        let item = self.item(id)?;
        let fi = item
            .frame_info
            .get(index)
            .ok_or_else(|| ErrorKind::Selection {
                id: id.to_owned(),
                reason: format!(
                    "frame index {index} is out of range for {} frames",
                    item.frame_info.len()
                ),
            })?;
        self.read(id, index, fi)
    }

    /// The JPEG bytes of the selected frames of `id`, in selection order.
    pub fn frames(&self, id: &str, selection: &Selection) -> Result<Vec<Cow<'_, [u8]>>> {
        let item = self.item(id)?;
        let indices =
            selection
                .resolve(item.frame_info.len())
                .map_err(|reason| ErrorKind::Selection {
                    id: id.to_owned(),
                    reason,
                })?;
        self.frames_at(id, &indices)
    }

    /// The JPEG bytes of frames `indices` of `id`, in that order. From an
    /// object store, the frames come in as few range requests as their
    /// places allow (one for frames close together).
    pub fn frames_at(&self, id: &str, indices: &[usize]) -> Result<Vec<Cow<'_, [u8]>>> {
        let item = self.item(id)?;
        let records = indices
            .iter()
            .map(|&k| {
                let fi = item.frame_info.get(k).ok_or_else(|| {
                    crate::Error::from(ErrorKind::Selection {
                        id: id.to_owned(),
                        reason: format!(
                            "frame index {k} is out of range for {} frames",
                            item.frame_info.len()
                        ),
                    })
                })?;
                Ok((k, *fi))
            })
            .collect::<Result<Vec<_>>>()?;
        self.records_at(id, &records)
    }

    /// The JPEG bytes of the records `(frame index, frame_info)` of `id`, in
    /// that order, each checked against the file as [`read`](Self::read)
    /// checks it; from an object store, in as few range requests as their
    /// places allow. For a caller that keeps its own index of the frames
    /// (the clip loader's compact one) rather than this reader's meta.
    pub fn records_at(
        &self,
        id: &str,
        records: &[(usize, FrameInfo)],
    ) -> Result<Vec<Cow<'_, [u8]>>> {
        if let Data::Remote {
            cached: Some(c), ..
        } = &self.data
        {
            // Whole records are kept (their padding too), so that the
            // ranges of consecutive items meet and a whole copy made from
            // them later fetches only what was never read.
            let spans = records
                .iter()
                .map(|(k, fi)| self.record_range(id, *k, fi))
                .collect::<Result<Vec<_>>>()?;
            let got = c
                .ranges
                .read(&spans, c.via.fetch(&self.data_path, &c.version))
                .map_err(|e| self.locate_remote(e, id))?;
            return records
                .iter()
                .zip(got)
                .map(|((k, fi), mut bytes)| {
                    let (start, end) = self.jpeg_range(id, *k, fi)?;
                    bytes.truncate(usize::try_from(end - start).unwrap_or(usize::MAX));
                    Ok(Cow::Owned(bytes))
                })
                .collect();
        }
        if let Data::Remote { store, .. } = &self.data {
            let ranges = records
                .iter()
                .map(|(k, fi)| {
                    let (s, e) = self.jpeg_range(id, *k, fi)?;
                    Ok(s..e)
                })
                .collect::<Result<Vec<_>>>()?;
            let got = store
                .get_ranges(&self.data_path, &ranges)
                .map_err(|e| self.locate_remote(e, id))?;
            return Ok(got.into_iter().map(Cow::Owned).collect());
        }
        records
            .iter()
            .map(|(k, fi)| self.read(id, *k, fi))
            .collect()
    }

    /// Adds the item to an object-store error.
    fn locate_remote(&self, e: impl Into<crate::Error>, id: &str) -> crate::Error {
        let e = e.into();
        match e.kind() {
            ErrorKind::Remote { url, range, reason } => ErrorKind::Remote {
                url: url.clone(),
                range: *range,
                reason: format!("id {id:?}: {reason}"),
            }
            .into(),
            ErrorKind::RemoteNotFound { url, range, reason } => ErrorKind::RemoteNotFound {
                url: url.clone(),
                range: *range,
                reason: format!("id {id:?}: {reason}"),
            }
            .into(),
            _ => e,
        }
    }

    /// The JPEG bytes of one record, after checking it against the file.
    pub fn read(&self, id: &str, index: usize, fi: &FrameInfo) -> Result<Cow<'_, [u8]>> {
        let (start, end) = self.jpeg_range(id, index, fi)?;
        match &self.data {
            Data::Mapped(map) => {
                let (s, e) = (usize::try_from(start), usize::try_from(end));
                match (s, e) {
                    (Ok(s), Ok(e)) if e <= map.len() => Ok(Cow::Borrowed(&map[s..e])),
                    _ => Err(Error::record(
                        &self.data_path,
                        id,
                        index,
                        fi.loc,
                        "record lies outside the mapping",
                    )),
                }
            }
            Data::Remote { store, cached } => {
                if cached.is_some() {
                    let mut got = self.records_at(id, &[(index, *fi)])?;
                    return Ok(got.pop().unwrap_or_default());
                }
                let range = start..end;
                let mut got = store
                    .get_ranges(&self.data_path, std::slice::from_ref(&range))
                    .map_err(|e| self.locate_remote(e, id))?;
                Ok(Cow::Owned(got.pop().unwrap_or_default()))
            }
            Data::File(file) => {
                let n = usize::try_from(end - start).map_err(|_| {
                    Error::record(&self.data_path, id, index, fi.loc, "record too large")
                })?;
                let mut buf = vec![0; n];
                let mut file = file
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                file.seek(SeekFrom::Start(start))
                    .and_then(|_| file.read_exact(&mut buf))
                    .map_err(|e| Error::io("reading", &self.data_path, e))?;
                Ok(Cow::Owned(buf))
            }
        }
    }

    /// Byte range of a whole record (`loc .. loc + length`), checked as
    /// [`jpeg_range`](Self::jpeg_range) checks it.
    fn record_range(&self, id: &str, index: usize, fi: &FrameInfo) -> Result<std::ops::Range<u64>> {
        let (start, _) = self.jpeg_range(id, index, fi)?;
        Ok(start..fi.end().unwrap_or(start))
    }

    /// Byte range of a record's JPEG (`loc .. loc + length - pad`), checked
    /// against the record rules and the data file size.
    pub fn jpeg_range(&self, id: &str, index: usize, fi: &FrameInfo) -> Result<(u64, u64)> {
        if let Some(problem) = fi.problem() {
            return Err(Error::record(&self.data_path, id, index, fi.loc, problem));
        }
        let record_end = fi.end().unwrap_or(u64::MAX);
        if record_end > self.data_len {
            return Err(Error::record(
                &self.data_path,
                id,
                index,
                fi.loc,
                format!(
                    "record ends at byte {record_end}, past the end of the data file ({} bytes)",
                    self.data_len
                ),
            ));
        }
        let jpeg_len = fi.jpeg_len().unwrap_or(0);
        Ok((fi.loc, fi.loc + jpeg_len))
    }
}

// Decoding a record, with its place added to a decoding error.
impl ChunkReader {
    /// Decodes frame `index` of `id` with `decoder`. Unlike [`decode_jpeg`](gulp_codec::decode_jpeg),
    /// a decoding error says where the frame is: the id, the frame, the data
    /// file and the record's byte offset.
    pub fn decode_frame(
        &self,
        id: &str,
        index: usize,
        decoder: &dyn FrameDecoder,
    ) -> Result<Image> {
        let jpeg = self.frame(id, index)?;
        decoder
            .decode(&jpeg)
            .map_err(|e| self.locate_decode_error(e, id, index))
    }

    /// Decodes frame `index` of `id` into `out` with `options` (see
    /// [`decode_jpeg_into`]); an error says where the frame is.
    pub fn decode_frame_into(
        &self,
        id: &str,
        index: usize,
        options: &DecodeOptions,
        out: &mut [u8],
    ) -> Result<Shape> {
        let jpeg = self.frame(id, index)?;
        decode_jpeg_into(&jpeg, options, out).map_err(|e| self.locate_decode_error(e, id, index))
    }

    /// Decodes frame `index` of `id` with `options` into a buffer that
    /// `alloc` makes for the output shape: the header is read once, the
    /// caller chooses where the pixels go (a pooled buffer, a slice of a
    /// batch), and an error says where the frame is. Returns the shape
    /// written, at the start of the buffer.
    pub fn decode_frame_with<B: AsMut<[u8]>>(
        &self,
        id: &str,
        index: usize,
        options: &DecodeOptions,
        alloc: impl FnOnce(Shape) -> B,
    ) -> Result<(Shape, B)> {
        let jpeg = self.frame(id, index)?;
        self.decode_jpeg_with(id, index, &jpeg, options, alloc)
    }

    /// [`decode_frame_with`](Self::decode_frame_with) on bytes already
    /// read (e.g. all frames of an item, read together by
    /// [`frames_at`](Self::frames_at): from an object store, one request).
    pub fn decode_jpeg_with<B: AsMut<[u8]>>(
        &self,
        id: &str,
        index: usize,
        jpeg: &[u8],
        options: &DecodeOptions,
        alloc: impl FnOnce(Shape) -> B,
    ) -> Result<(Shape, B)> {
        let loc = self.record_loc(id, index);
        self.decode_record_with(id, index, loc, jpeg, options, alloc)
    }

    /// [`decode_jpeg_with`](Self::decode_jpeg_with) for a record whose
    /// byte offset the caller knows (from an item read alone, see
    /// [`GulpDirectory::read_item`](crate::GulpDirectory::read_item)).
    pub fn decode_record_with<B: AsMut<[u8]>>(
        &self,
        id: &str,
        index: usize,
        loc: u64,
        jpeg: &[u8],
        options: &DecodeOptions,
        alloc: impl FnOnce(Shape) -> B,
    ) -> Result<(Shape, B)> {
        let decode = || -> Result<(Shape, B)> {
            let mut frame = JpegFrame::new(jpeg, options.codec)?;
            let header = *frame.header();
            // Refused before the allocation, whatever the header claims.
            check_size(header.width, header.height)?;
            let mut buf = alloc(header.output_shape(options));
            let shape = frame.decode_into(options, buf.as_mut())?;
            Ok((shape, buf))
        };
        decode().map_err(|e| self.locate_at(e, id, index, loc))
    }

    /// Runs `f` on frame `index` of `id` opened as a [`JpegFrame`] (its
    /// header read once): the caller chooses how to decode from the header
    /// (a scale and a region for a crop, a slice of a batch for the
    /// output), and a decoding error from `f` says where the frame is.
    pub fn with_frame<T>(
        &self,
        id: &str,
        index: usize,
        codec: Codec,
        f: impl FnOnce(&mut JpegFrame<'_>) -> Result<T>,
    ) -> Result<T> {
        let jpeg = self.frame(id, index)?;
        self.with_jpeg(id, index, &jpeg, codec, f)
    }

    /// [`with_frame`](Self::with_frame) on bytes already read (e.g. all
    /// frames of a clip, read together by [`frames_at`](Self::frames_at)):
    /// a decoding error says that they are frame `index` of `id`.
    pub fn with_jpeg<T>(
        &self,
        id: &str,
        index: usize,
        jpeg: &[u8],
        codec: Codec,
        f: impl FnOnce(&mut JpegFrame<'_>) -> Result<T>,
    ) -> Result<T> {
        self.with_record(id, index, self.record_loc(id, index), jpeg, codec, f)
    }

    /// The byte offset of a frame's record, from the meta (0 if unknown).
    fn record_loc(&self, id: &str, index: usize) -> u64 {
        self.item(id)
            .ok()
            .and_then(|item| item.frame_info.get(index))
            .map_or(0, |fi| fi.loc)
    }

    /// [`with_jpeg`](Self::with_jpeg) for a record whose byte offset the
    /// caller knows (from an index of its own, see
    /// [`records_at`](Self::records_at)).
    pub fn with_record<T>(
        &self,
        id: &str,
        index: usize,
        loc: u64,
        jpeg: &[u8],
        codec: Codec,
        f: impl FnOnce(&mut JpegFrame<'_>) -> Result<T>,
    ) -> Result<T> {
        let run = || -> Result<T> {
            let mut frame = JpegFrame::new(jpeg, codec)?;
            f(&mut frame)
        };
        run().map_err(|e| self.locate_at(e, id, index, loc))
    }

    /// Adds the frame's place to a decoding error that has none.
    fn locate_decode_error(
        &self,
        e: impl Into<crate::Error>,
        id: &str,
        index: usize,
    ) -> crate::Error {
        self.locate_at(e, id, index, self.record_loc(id, index))
    }

    fn locate_at(
        &self,
        e: impl Into<crate::Error>,
        id: &str,
        index: usize,
        loc: u64,
    ) -> crate::Error {
        let e = e.into();
        match e.kind() {
            ErrorKind::Decode { at, reason } if at.is_empty() => ErrorKind::Decode {
                at: format!(
                    " in {}: id {id:?} frame {index} (record at byte {loc})",
                    self.data_path().display()
                ),
                reason: reason.clone(),
            }
            .into(),
            _ => e,
        }
    }
}
