//! `Writer`: one chunk being written (the native side of
//! `GulpChunk.open('wb')` / `open('ab')` and of `GulpIngestor`).

use std::path::PathBuf;
use std::thread;

use gulp_format::MetaFormat;
use gulp_ingest::Pixels;
use gulp_io::{ChunkSummary, ChunkWriter};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::codec::{encode_pixels, frame_pixels};
use crate::convert::from_py;
use crate::errors::{Class, io_err};

/// A chunk being written. Items go to temporary files; `commit` makes the
/// chunk visible (data and meta together, synced), and a writer that is
/// closed, aborted or garbage-collected without `commit` leaves the
/// directory as it was.
#[pyclass(module = "gulp._gulp")]
pub(crate) struct Writer {
    dir: PathBuf,
    chunk: u64,
    format: MetaFormat,
    fsync: bool,
    writer: Option<ChunkWriter>,
}

/// A meta format by name (`json` or `msgpack`), parsed as gulp-format
/// parses it.
pub(crate) fn meta_format(name: &str) -> PyResult<MetaFormat> {
    name.parse().map_err(|e: String| Class::Invalid.err(e))
}

fn summary_dict<'py>(py: Python<'py>, s: &ChunkSummary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("chunk", s.chunk)?;
    d.set_item("data_path", &s.data_path)?;
    d.set_item("meta_path", &s.meta_path)?;
    d.set_item("items", s.items)?;
    d.set_item("frames", s.frames)?;
    d.set_item("bytes", s.bytes)?;
    Ok(d)
}

/// Encodes frames on up to one thread per core, in order.
fn encode_all(frames: &[Pixels], quality: u8) -> PyResult<Vec<Vec<u8>>> {
    let threads = thread::available_parallelism()
        .map_or(1, usize::from)
        .min(frames.len());
    if threads <= 1 {
        return frames.iter().map(|f| encode_pixels(f, quality)).collect();
    }
    let per = frames.len().div_ceil(threads);
    thread::scope(|s| {
        let handles: Vec<_> = frames
            .chunks(per)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|f| encode_pixels(f, quality))
                        .collect::<PyResult<Vec<_>>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(frames.len());
        for h in handles {
            let part = h
                .join()
                .map_err(|_| Class::Encode.err("an encoding thread panicked"))??;
            out.extend(part);
        }
        Ok(out)
    })
}

impl Writer {
    fn closed(&self) -> PyErr {
        Class::Invalid.err(format!(
            "chunk {} of {} is not open for writing",
            self.chunk,
            self.dir.display()
        ))
    }

    fn writer(&mut self) -> PyResult<&mut ChunkWriter> {
        if self.writer.is_none() {
            return Err(self.closed());
        }
        Ok(self.writer.as_mut().expect("checked just above"))
    }
}

#[pymethods]
impl Writer {
    /// Opens chunk `chunk` of `dir` for writing: mode 'wb' starts it afresh
    /// (replacing a chunk of that number when committed), 'ab' appends to
    /// it (creating it if it does not exist), 'xb' fails if it exists.
    #[new]
    #[pyo3(signature = (dir, chunk, mode = "wb", meta_format = "json", fsync = true))]
    fn new(
        py: Python<'_>,
        dir: PathBuf,
        chunk: u64,
        mode: &str,
        meta_format: &str,
        fsync: bool,
    ) -> PyResult<Writer> {
        let format = self::meta_format(meta_format)?;
        let mut builder = ChunkWriter::builder();
        builder.meta_format(format).fsync(fsync);
        let meta = dir.join(gulp_format::meta_file_name(chunk));
        let writer = py
            .detach(|| match mode {
                "wb" => builder.replace(&dir, chunk).map(Some),
                "xb" => builder.create(&dir, chunk).map(Some),
                "ab" if meta.exists() => builder.append_to(&dir, chunk).map(Some),
                "ab" => builder.create(&dir, chunk).map(Some),
                _ => Ok(None),
            })
            .map_err(io_err)?
            .ok_or_else(|| {
                Class::Invalid.err(format!("mode must be 'wb', 'ab' or 'xb', not {mode:?}"))
            })?;
        Ok(Writer {
            dir,
            chunk,
            format,
            fsync,
            writer: Some(writer),
        })
    }

    /// The chunk number.
    #[getter]
    fn chunk(&self) -> u64 {
        self.chunk
    }

    /// Whether the writer is open.
    #[getter]
    fn is_open(&self) -> bool {
        self.writer.is_some()
    }

    /// Items written so far (with those of the chunk appended to).
    fn __len__(&self) -> usize {
        self.writer.as_ref().map_or(0, |w| w.meta().len())
    }

    /// Appends an item: `meta` (stored as one more `meta_data` entry of
    /// `id`) and `frames`, numpy `uint8` arrays encoded to JPEG at
    /// `quality`, on all cores with the GIL released.
    #[pyo3(signature = (id, meta, frames, quality = 90))]
    fn append(
        &mut self,
        py: Python<'_>,
        id: &str,
        meta: &Bound<'_, PyAny>,
        frames: &Bound<'_, PyAny>,
        quality: u8,
    ) -> PyResult<usize> {
        let what = || format!("meta of id {id:?}");
        let meta = from_py(meta, &what)?;
        let mut pixels = Vec::new();
        for (k, frame) in frames.try_iter()?.enumerate() {
            let px = frame_pixels(&frame?)
                .map_err(|e| Class::Invalid.err(format!("id {id:?} frame {k}: {}", e.value(py))))?;
            pixels.push(px);
        }
        let writer = self.writer()?;
        let n = pixels.len();
        py.detach(|| {
            let jpegs = encode_all(&pixels, quality)?;
            writer.append(id, meta, &jpegs).map_err(io_err)
        })?;
        Ok(n)
    }

    /// Appends an item whose frames are JPEG bytes already, stored as they
    /// are (after a check that each is a JPEG).
    fn append_jpegs(
        &mut self,
        py: Python<'_>,
        id: &str,
        meta: &Bound<'_, PyAny>,
        frames: Vec<Vec<u8>>,
    ) -> PyResult<usize> {
        let what = || format!("meta of id {id:?}");
        let meta = from_py(meta, &what)?;
        for (k, f) in frames.iter().enumerate() {
            gulp_ingest::frames::check_jpeg(f).map_err(|e| {
                Class::Invalid.err(format!("id {id:?} frame {k} is not a valid JPEG: {e}"))
            })?;
        }
        let writer = self.writer()?;
        let n = frames.len();
        py.detach(|| writer.append(id, meta, &frames))
            .map_err(io_err)?;
        Ok(n)
    }

    /// Commits the chunk and returns what it holds; with `reopen`, the
    /// writer goes on appending to the committed chunk (gulpio2's
    /// `flush()`).
    #[pyo3(signature = (reopen = false))]
    fn commit<'py>(&mut self, py: Python<'py>, reopen: bool) -> PyResult<Bound<'py, PyDict>> {
        let Some(writer) = self.writer.take() else {
            return Err(self.closed());
        };
        let summary = py.detach(|| writer.finish()).map_err(io_err)?;
        if reopen {
            let mut builder = ChunkWriter::builder();
            builder.meta_format(self.format).fsync(self.fsync);
            let (dir, chunk) = (&self.dir, self.chunk);
            let w = py
                .detach(|| builder.append_to(dir, chunk))
                .map_err(io_err)?;
            self.writer = Some(w);
        }
        summary_dict(py, &summary)
    }

    /// Drops what was written since opening; the directory stays as it was.
    fn abort(&mut self, py: Python<'_>) {
        let writer = self.writer.take();
        py.detach(|| drop(writer));
    }
}
