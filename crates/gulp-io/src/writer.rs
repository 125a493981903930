//! Writing chunks: buffered, and committed atomically by `finish()`.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use gulp_format::{
    Audio, AudioCodec, AudioTrack, ChunkMeta, FrameInfo, FrameTimes, MetaFormat, PAD_BYTE,
    TEMP_PREFIX, Value, data_file_name, meta_file_name,
};

use crate::error::{Error, ErrorKind, Result};
use crate::reader::load_meta;

const WRITE_BUFFER: usize = 1 << 20;

/// Settings for a [`ChunkWriter`].
#[derive(Debug, Clone)]
pub struct ChunkWriterBuilder {
    format: MetaFormat,
    fsync: bool,
}

impl Default for ChunkWriterBuilder {
    fn default() -> Self {
        ChunkWriterBuilder {
            format: MetaFormat::Json,
            fsync: true,
        }
    }
}

impl ChunkWriterBuilder {
    /// The meta format to write (default JSON, which gulpio2 reads).
    pub fn meta_format(&mut self, format: MetaFormat) -> &mut Self {
        self.format = format;
        self
    }

    /// Whether `finish` syncs the files and the directory to disk before and
    /// after the rename (default on; off only for throw-away output).
    pub fn fsync(&mut self, fsync: bool) -> &mut Self {
        self.fsync = fsync;
        self
    }

    /// Starts a new chunk number `chunk` in `dir` (which must exist). Fails if
    /// either file of that chunk exists.
    pub fn create(&self, dir: impl AsRef<Path>, chunk: u64) -> Result<ChunkWriter> {
        let dir = dir.as_ref();
        let writer = ChunkWriter::new(self, dir, chunk);
        if writer.data_path.exists() || writer.meta_path.exists() {
            return Err(ErrorKind::ChunkExists {
                chunk,
                dir: dir.to_owned(),
            }
            .into());
        }
        writer.start(ChunkMeta::new(), 0, false)
    }

    /// Starts chunk number `chunk` in `dir` afresh, to replace the chunk of
    /// that number if there is one (gulpio2's `open('wb')` on an existing
    /// chunk). The old chunk stays readable until `finish()`, which first
    /// removes its meta file (so that the old meta never describes the new
    /// data, even after a crash between the renames), then commits.
    pub fn replace(&self, dir: impl AsRef<Path>, chunk: u64) -> Result<ChunkWriter> {
        let mut writer = ChunkWriter::new(self, dir.as_ref(), chunk);
        writer.replacing = true;
        writer.start(ChunkMeta::new(), 0, false)
    }

    /// Reopens the existing chunk number `chunk` in `dir` to append items.
    ///
    /// The chunk's files are copied to temporary names and only replaced when
    /// `finish()` commits, so the chunk stays readable as it was until then.
    pub fn append_to(&self, dir: impl AsRef<Path>, chunk: u64) -> Result<ChunkWriter> {
        let dir = dir.as_ref();
        let mut writer = ChunkWriter::new(self, dir, chunk);
        let mut meta = load_meta(&writer.meta_path)?;
        // From here on the temporary files are this writer's: a failed copy
        // is removed on drop.
        writer.owns_temp = true;
        let len = fs::copy(&writer.data_path, &writer.tmp_data)
            .map_err(|e| Error::io("copying", &writer.data_path, e))?;
        if self.format == MetaFormat::Msgpack {
            add_missing_checksums(&mut meta, &writer.tmp_data, &writer.data_path)?;
        }
        writer.start(meta, len, true)
    }
}

/// What a committed chunk holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSummary {
    /// The chunk number.
    pub chunk: u64,
    /// The data file.
    pub data_path: PathBuf,
    /// The meta file.
    pub meta_path: PathBuf,
    /// Items in the chunk.
    pub items: usize,
    /// Frames in the chunk.
    pub frames: usize,
    /// Size of the data file in bytes.
    pub bytes: u64,
}

/// Writes one chunk: `append` items, then `finish` to commit.
///
/// Records go to a temporary data file (a name gulpio2's `data*.gulp` glob
/// and gulp's reader both ignore) through a buffer; `finish` writes the meta
/// to a temporary file, syncs both, and renames them into place, data first,
/// so a meta file never appears before its data. A writer dropped without
/// `finish` removes its temporary files and leaves the directory as it was.
#[derive(Debug)]
pub struct ChunkWriter {
    chunk: u64,
    dir: PathBuf,
    format: MetaFormat,
    fsync: bool,
    data_path: PathBuf,
    meta_path: PathBuf,
    tmp_data: PathBuf,
    tmp_meta: PathBuf,
    out: Option<BufWriter<File>>,
    pos: u64,
    meta: ChunkMeta,
    committed: bool,
    /// Whether this writer has created its temporary files. A writer that
    /// fails before that (the chunk exists, the chunk to append to does not)
    /// must not remove files under those names: they may belong to another
    /// writer of the same chunk number.
    owns_temp: bool,
    /// Whether `finish` replaces an existing chunk of the same number.
    replacing: bool,
}

impl ChunkWriter {
    /// A builder with the defaults: JSON meta, fsync on.
    pub fn builder() -> ChunkWriterBuilder {
        ChunkWriterBuilder::default()
    }

    fn new(builder: &ChunkWriterBuilder, dir: &Path, chunk: u64) -> ChunkWriter {
        let data_name = data_file_name(chunk);
        let meta_name = meta_file_name(chunk);
        ChunkWriter {
            chunk,
            dir: dir.to_owned(),
            format: builder.format,
            fsync: builder.fsync,
            tmp_data: dir.join(format!("{TEMP_PREFIX}{data_name}")),
            tmp_meta: dir.join(format!("{TEMP_PREFIX}{meta_name}")),
            data_path: dir.join(data_name),
            meta_path: dir.join(meta_name),
            out: None,
            pos: 0,
            meta: ChunkMeta::new(),
            committed: false,
            owns_temp: false,
            replacing: false,
        }
    }

    fn start(mut self, meta: ChunkMeta, pos: u64, existing: bool) -> Result<ChunkWriter> {
        self.owns_temp = true;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(!existing)
            .open(&self.tmp_data)
            .map_err(|e| Error::io("creating", &self.tmp_data, e))?;
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
        if existing {
            out.seek(SeekFrom::Start(pos))
                .map_err(|e| Error::io("seeking", &self.tmp_data, e))?;
        }
        self.out = Some(out);
        self.meta = meta;
        self.pos = pos;
        Ok(self)
    }

    /// The chunk number.
    pub fn chunk(&self) -> u64 {
        self.chunk
    }

    /// The meta written so far.
    pub fn meta(&self) -> &ChunkMeta {
        &self.meta
    }

    /// Bytes of data written so far (the data file size after `finish`).
    pub fn data_len(&self) -> u64 {
        self.pos
    }

    /// Appends an item: its `meta_data` and its frames as encoded JPEG bytes.
    ///
    /// As in GulpIO, appending an id that is already in the chunk adds another
    /// `meta_data` entry to it and adds the frames after its earlier ones.
    pub fn append<F: AsRef<[u8]>>(
        &mut self,
        id: &str,
        meta_data: Value,
        frames: impl IntoIterator<Item = F>,
    ) -> Result<()> {
        self.append_with(id, meta_data, frames, ItemMedia::default())
    }

    /// [`append`](Self::append) with the item's frame times and sound
    /// (`docs/format.md` §8): the audio's record is written just before the
    /// frames. An item with either is appended once: its id may not be in
    /// the chunk already, and an id that is there with times or sound takes
    /// no more frames.
    pub fn append_with<F: AsRef<[u8]>>(
        &mut self,
        id: &str,
        meta_data: Value,
        frames: impl IntoIterator<Item = F>,
        media: ItemMedia<'_>,
    ) -> Result<()> {
        let invalid = |reason: String| -> Error {
            ErrorKind::Invalid {
                path: self.tmp_data.clone(),
                reason: format!("id {id:?}: {reason}"),
            }
            .into()
        };
        if let Some(item) = self.meta.get(id)
            && (!media.is_empty() || item.frame_times.is_some() || item.audio.is_some())
        {
            return Err(invalid(
                "already in the chunk; an item with frame times or sound is appended once".into(),
            ));
        }
        if let Some(AudioInput::Pcm(pcm)) = &media.audio {
            pcm.check().map_err(invalid)?;
        }
        let Some(out) = self.out.as_mut() else {
            return Err(ErrorKind::Invalid {
                path: self.tmp_data.clone(),
                reason: "writer is closed".into(),
            }
            .into());
        };
        let item_start = self.pos;
        let audio = match media.audio {
            None => None,
            Some(AudioInput::NoTrack) => Some(Audio::NoTrack),
            Some(AudioInput::Pcm(pcm)) => {
                let record = FrameInfo::for_jpeg(self.pos, pcm.samples.len() as u64);
                write_record(out, pcm.samples, record.pad)
                    .map_err(|e| Error::io("writing", &self.tmp_data, e))?;
                self.pos += record.length;
                Some(Audio::Track(AudioTrack {
                    record,
                    codec: AudioCodec::PcmS16le,
                    sample_rate: pcm.sample_rate,
                    channels: pcm.channels,
                    samples: pcm.sample_count(),
                    start: pcm.start,
                    checksum: crc32fast::hash(pcm.samples),
                }))
            }
        };
        let mut infos = Vec::new();
        let mut checksums = Vec::new();
        for frame in frames {
            let jpeg = frame.as_ref();
            let info = FrameInfo::for_jpeg(self.pos, jpeg.len() as u64);
            write_record(out, jpeg, info.pad)
                .map_err(|e| Error::io("writing", &self.tmp_data, e))?;
            self.pos += info.length;
            infos.push(info);
            if self.format == MetaFormat::Msgpack {
                checksums.push(crc32fast::hash(jpeg));
            }
        }
        if let Some(FrameTimes::List(times)) = &media.frame_times
            && times.len() != infos.len()
        {
            // Its records are taken back: the next item overwrites them,
            // and `finish` cuts the file at the last item's end.
            let n = infos.len();
            out.seek(SeekFrom::Start(item_start))
                .map_err(|e| Error::io("seeking", &self.tmp_data, e))?;
            self.pos = item_start;
            return Err(invalid(format!(
                "{} frame times for {n} frames",
                times.len()
            )));
        }
        let item = self.meta.append(id, meta_data, infos);
        item.frame_checksums.extend(checksums);
        item.frame_times = media.frame_times;
        item.audio = audio;
        Ok(())
    }

    /// Commits the chunk: data and meta become visible together, synced.
    pub fn finish(mut self) -> Result<ChunkSummary> {
        let out = self.out.take().ok_or_else(|| {
            Error::from(ErrorKind::Invalid {
                path: self.tmp_data.clone(),
                reason: "writer is closed".into(),
            })
        })?;
        let file = out
            .into_inner()
            .map_err(|e| Error::io("writing", &self.tmp_data, e.into_error()))?;
        // An item taken back (see `append_with`) may have left bytes past
        // the last record.
        file.set_len(self.pos)
            .map_err(|e| Error::io("writing", &self.tmp_data, e))?;
        if self.fsync {
            file.sync_all()
                .map_err(|e| Error::io("syncing", &self.tmp_data, e))?;
        }
        drop(file);

        let bytes = self
            .format
            .serializer()
            .to_vec(&self.meta)
            .map_err(|source| ErrorKind::Meta {
                path: self.meta_path.clone(),
                source,
            })?;
        let mut meta_file =
            File::create(&self.tmp_meta).map_err(|e| Error::io("creating", &self.tmp_meta, e))?;
        meta_file
            .write_all(&bytes)
            .map_err(|e| Error::io("writing", &self.tmp_meta, e))?;
        if self.fsync {
            meta_file
                .sync_all()
                .map_err(|e| Error::io("syncing", &self.tmp_meta, e))?;
        }
        drop(meta_file);

        if self.replacing {
            match fs::remove_file(&self.meta_path) {
                Ok(()) if self.fsync => sync_dir(&self.dir)?,
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("removing", &self.meta_path, e)),
            }
        }
        fs::rename(&self.tmp_data, &self.data_path)
            .map_err(|e| Error::io("renaming", &self.tmp_data, e))?;
        fs::rename(&self.tmp_meta, &self.meta_path)
            .map_err(|e| Error::io("renaming", &self.tmp_meta, e))?;
        self.committed = true;
        if self.fsync {
            sync_dir(&self.dir)?;
        }
        Ok(ChunkSummary {
            chunk: self.chunk,
            data_path: self.data_path.clone(),
            meta_path: self.meta_path.clone(),
            items: self.meta.len(),
            frames: self.meta.n_frames(),
            bytes: self.pos,
        })
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        if self.owns_temp && !self.committed {
            self.out = None;
            let _ = fs::remove_file(&self.tmp_data);
            let _ = fs::remove_file(&self.tmp_meta);
        }
    }
}

/// Writes one record: its bytes, then `pad` zero bytes.
fn write_record(out: &mut impl Write, bytes: &[u8], pad: u64) -> std::io::Result<()> {
    let zeros = [PAD_BYTE; 3];
    out.write_all(bytes)?;
    out.write_all(&zeros[..usize::try_from(pad).unwrap_or(0).min(3)])
}

/// An item's time and sound, for [`ChunkWriter::append_with`].
#[derive(Debug, Clone, Default)]
pub struct ItemMedia<'a> {
    /// Each frame's presentation time.
    pub frame_times: Option<FrameTimes>,
    /// The sound, when the ingest keeps sound.
    pub audio: Option<AudioInput<'a>>,
}

impl ItemMedia<'_> {
    fn is_empty(&self) -> bool {
        self.frame_times.is_none() && self.audio.is_none()
    }
}

/// An item's sound as a writer takes it.
#[derive(Debug, Clone)]
pub enum AudioInput<'a> {
    /// The source has no sound that could be decoded (stored as
    /// `"audio": null`).
    NoTrack,
    /// The samples.
    Pcm(Pcm<'a>),
}

/// Interleaved signed 16-bit little-endian samples, and their place in time.
#[derive(Debug, Clone)]
pub struct Pcm<'a> {
    /// The samples' bytes, `channels × 2` per sample.
    pub samples: &'a [u8],
    /// Samples per second.
    pub sample_rate: u32,
    /// Interleaved channels.
    pub channels: u16,
    /// The source time of the first sample, in seconds.
    pub start: f64,
}

impl Pcm<'_> {
    /// Samples of each channel.
    pub fn sample_count(&self) -> u64 {
        (self.samples.len() / (usize::from(self.channels.max(1)) * 2)) as u64
    }

    fn check(&self) -> std::result::Result<(), String> {
        if !(1..=gulp_format::MAX_SAMPLE_RATE).contains(&self.sample_rate) {
            return Err(format!("sample rate {} is out of range", self.sample_rate));
        }
        if !(1..=gulp_format::MAX_CHANNELS).contains(&self.channels) {
            return Err(format!("{} audio channels", self.channels));
        }
        if !self
            .samples
            .len()
            .is_multiple_of(usize::from(self.channels) * 2)
        {
            return Err(format!(
                "{} bytes of audio are not whole 16-bit samples of {} channels",
                self.samples.len(),
                self.channels
            ));
        }
        if !self.start.is_finite() {
            return Err("the audio's start time is not finite".into());
        }
        Ok(())
    }
}

/// Makes the renames in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("syncing directory", dir, e))
}

/// Fills in the CRC-32 of frames that have none (a chunk first written with
/// JSON meta), reading them from `data`.
fn add_missing_checksums(meta: &mut ChunkMeta, data: &Path, shown: &Path) -> Result<()> {
    let mut file = File::open(data).map_err(|e| Error::io("opening", data, e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io("reading", data, e))?
        .len();
    let ids: Vec<String> = meta.ids().map(str::to_owned).collect();
    let mut buf = Vec::new();
    for id in ids {
        let Some(item) = meta.get_mut(&id) else {
            continue;
        };
        if item.frame_checksums.len() == item.frame_info.len() {
            continue;
        }
        item.frame_checksums.clear();
        for (k, fi) in item.frame_info.iter().enumerate() {
            let jpeg_len = fi
                .jpeg_len()
                .filter(|_| fi.problem().is_none())
                .filter(|&n| fi.loc.checked_add(n).is_some_and(|end| end <= len))
                .ok_or_else(|| {
                    Error::record(shown, &id, k, fi.loc, "record lies outside the data file")
                })?;
            buf.resize(usize::try_from(jpeg_len).unwrap_or(0), 0);
            file.seek(SeekFrom::Start(fi.loc))
                .and_then(|_| file.read_exact(&mut buf))
                .map_err(|e| Error::io("reading", data, e))?;
            item.frame_checksums.push(crc32fast::hash(&buf));
        }
    }
    Ok(())
}
