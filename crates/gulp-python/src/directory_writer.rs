//! `DirectoryWriter`: the native half of `gulp.Writer`, a
//! `gulp_ingest::Writer` (items pushed one at a time, encoded on its
//! threads, committed chunk by chunk).

use std::num::NonZeroUsize;
use std::path::PathBuf;

use gulp_ingest::{Frames, OnExists, Pixels, SubsamplingChoice, Writer};
use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyMemoryView, PyString};

use crate::convert::from_py;
use crate::errors::{Class, ingest_err};
use crate::ingest::report_dict;
use crate::writer::meta_format;

/// A gulp directory open for writing items (see `gulp.Writer`).
#[pyclass(module = "gulp._gulp")]
pub(crate) struct DirectoryWriter {
    dir: PathBuf,
    writer: Option<Writer>,
}

/// A name of one of gulp-ingest's options, parsed there.
fn choice<T: std::str::FromStr<Err = gulp_format::UnknownChoice>>(name: &str) -> PyResult<T> {
    name.parse()
        .map_err(|e: gulp_format::UnknownChoice| Class::Invalid.err(e.to_string()))
}

impl DirectoryWriter {
    fn closed(dir: &std::path::Path) -> PyErr {
        Class::Invalid.err(format!("{}: the writer is closed", dir.display()))
    }

    fn writer(&mut self) -> PyResult<&mut Writer> {
        let dir = &self.dir;
        self.writer
            .as_mut()
            .ok_or_else(|| DirectoryWriter::closed(dir))
    }
}

#[pymethods]
impl DirectoryWriter {
    /// Opens `path` for writing (created if missing; locked until closed).
    #[new]
    #[pyo3(signature = (path, items_per_chunk = 100, *, quality = 90, subsampling = "auto",
                        meta_format = "json", on_exists = "error", labels = true,
                        threads = None, fsync = true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        items_per_chunk: usize,
        quality: u8,
        subsampling: &str,
        meta_format: &str,
        on_exists: &str,
        labels: bool,
        threads: Option<NonZeroUsize>,
        fsync: bool,
    ) -> PyResult<DirectoryWriter> {
        let mut builder = Writer::builder();
        builder
            .items_per_chunk(items_per_chunk)
            .quality(quality)
            .subsampling(choice::<SubsamplingChoice>(subsampling)?)
            .meta_format(self::meta_format(meta_format)?)
            .on_exists(choice::<OnExists>(on_exists)?)
            .number_labels(labels)
            .fsync(fsync);
        if let Some(threads) = threads {
            builder.workers(threads.get());
        }
        let writer = py.detach(|| builder.open(&path)).map_err(ingest_err)?;
        Ok(DirectoryWriter {
            dir: path,
            writer: Some(writer),
        })
    }

    /// Whether the writer is open (not yet finished or aborted).
    #[getter]
    fn is_open(&self) -> bool {
        self.writer.is_some()
    }

    /// Whether an error stopped the writer (it then commits nothing more).
    #[getter]
    fn stopped(&self) -> bool {
        self.writer.as_ref().is_some_and(Writer::is_stopped)
    }

    /// What was cleaned up at open from an interrupted earlier write.
    fn recovered(&self) -> Vec<String> {
        self.writer.as_ref().map_or_else(Vec::new, |w| {
            w.recovered().iter().map(ToString::to_string).collect()
        })
    }

    /// Adds an item (see `gulp.Writer.add`); `False` when its id was
    /// skipped.
    fn add(
        &mut self,
        py: Python<'_>,
        id: &str,
        frames: &Bound<'_, PyAny>,
        meta: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let dir = self.dir.clone();
        let writer = self.writer()?;
        let meta = from_py(meta, &|| format!("meta of id {id:?}"))?;
        let frames = frames_of(frames).map_err(|(frame, reason)| {
            ingest_err(gulp_ingest::Error::Rejected {
                dir,
                id: id.to_owned(),
                frame,
                reason,
            })
        })?;
        py.detach(|| writer.add(id, meta, frames))
            .map_err(ingest_err)
    }

    /// Ends the chunk being filled (see `gulp.Writer.end_chunk`).
    fn end_chunk(&mut self, py: Python<'_>) -> PyResult<()> {
        let writer = self.writer()?;
        py.detach(|| writer.end_chunk()).map_err(ingest_err)
    }

    /// Commits what was added and closes; the report as a dict.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Some(writer) = self.writer.take() else {
            return Err(DirectoryWriter::closed(&self.dir));
        };
        let report = py.detach(|| writer.finish()).map_err(ingest_err)?;
        report_dict(py, &report)
    }

    /// Closes without committing the chunk being filled.
    fn abort(&mut self, py: Python<'_>) {
        let writer = self.writer.take();
        py.detach(|| drop(writer));
    }
}

/// Why frames cannot be taken: the frame at fault (if one is) and what is
/// wrong.
type Refusal = (Option<usize>, String);

/// An item's frames: a `uint8` array `[T, H, W, 3]`, `[T, H, W, 1]` or
/// `[T, H, W]` (gray), or a sequence of `[H, W, 3]` / `[H, W, 1]` / `[H, W]`
/// arrays, or of JPEG bytes (`bytes`, `bytearray`, `memoryview`).
fn frames_of(obj: &Bound<'_, PyAny>) -> Result<Frames, Refusal> {
    if let Ok(array) = obj.cast::<PyUntypedArray>() {
        return array_frames(array, true)
            .map(Frames::Pixels)
            .map_err(|e| (None, e));
    }
    if obj.is_instance_of::<PyString>() || jpeg_bytes(obj).is_some() {
        return Err((
            None,
            format!(
                "frames are a sequence (one JPEG is [jpeg]) or a uint8 array, not {}",
                type_name(obj)
            ),
        ));
    }
    let items = obj.try_iter().map_err(|_| {
        (
            None,
            format!(
                "frames are a uint8 array [T, H, W, 3] or [T, H, W], or a sequence of arrays or of JPEG bytes, not {}",
                type_name(obj)
            ),
        )
    })?;
    let mut jpegs: Vec<Vec<u8>> = Vec::new();
    let mut pixels: Vec<Pixels> = Vec::new();
    for (k, item) in items.enumerate() {
        let item = item.map_err(|e| (Some(k), e.to_string()))?;
        if let Some(bytes) = jpeg_bytes(&item) {
            if !pixels.is_empty() {
                return Err((Some(k), MIXED.into()));
            }
            jpegs.push(bytes.map_err(|e| (Some(k), e.to_string()))?);
        } else if let Ok(array) = item.cast::<PyUntypedArray>() {
            if !jpegs.is_empty() {
                return Err((Some(k), MIXED.into()));
            }
            pixels.extend(array_frames(array, false).map_err(|e| (Some(k), e))?);
        } else {
            return Err((
                Some(k),
                format!(
                    "each frame is a uint8 array or JPEG bytes, not {}",
                    type_name(&item)
                ),
            ));
        }
    }
    Ok(if jpegs.is_empty() {
        Frames::Pixels(pixels)
    } else {
        Frames::Jpeg(jpegs)
    })
}

const MIXED: &str = "an item's frames are all arrays or all JPEG bytes, not both";

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// The bytes of a `bytes`, `bytearray` or `memoryview`; `None` for
/// anything else.
fn jpeg_bytes(obj: &Bound<'_, PyAny>) -> Option<PyResult<Vec<u8>>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Some(Ok(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Some(Ok(b.to_vec()));
    }
    if obj.is_instance_of::<PyMemoryView>() {
        return Some(
            obj.call_method0("tobytes")
                .and_then(|b| Ok(b.cast_into::<PyBytes>()?.as_bytes().to_vec())),
        );
    }
    None
}

/// The frames of a `uint8` array: `[T, H, W, C]` or `[T, H, W]` for a
/// whole item (`video`), `[H, W, C]` or `[H, W]` for one frame; `C` is 1 or
/// 3. The pixels are copied (C order, whatever the array's strides).
fn array_frames(array: &Bound<'_, PyUntypedArray>, video: bool) -> Result<Vec<Pixels>, String> {
    let py = array.py();
    let dtype = array.dtype();
    if !dtype.is_equiv_to(&numpy::dtype::<u8>(py)) {
        return Err(format!("frames must be uint8, not {dtype}"));
    }
    let shape = array.shape().to_vec();
    let frame_shape = if video {
        match shape[..] {
            [t, h, w, c] => (t, h, w, c),
            [_, _, 3 | 4] => {
                return Err(format!(
                    "a 3-d array is gray frames [T, H, W], and this one's last axis is {}: one RGB frame is frame[None] or [frame]",
                    shape[2]
                ));
            }
            [t, h, w] => (t, h, w, 1),
            _ => {
                return Err(format!(
                    "a {}-d array: frames are [T, H, W, 3], [T, H, W] (gray) or a sequence of [H, W, 3] / [H, W] arrays",
                    shape.len()
                ));
            }
        }
    } else {
        match shape[..] {
            [h, w, c] => (1, h, w, c),
            [h, w] => (1, h, w, 1),
            _ => {
                return Err(format!(
                    "a {}-d array: a frame is [H, W, 3] or [H, W] (gray)",
                    shape.len()
                ));
            }
        }
    };
    let (t, h, w, c) = frame_shape;
    if c != 1 && c != 3 {
        return Err(format!(
            "{c} channels; frames must have 1 (gray) or 3 (RGB)"
        ));
    }
    let side = |v: usize| u32::try_from(v).map_err(|_| format!("a frame side of {v} pixels"));
    let (height, width) = (side(h)?, side(w)?);
    let typed = array
        .cast::<PyArrayDyn<u8>>()
        .map_err(|e| format!("frames must be uint8 arrays: {e}"))?;
    let readonly = typed.try_readonly().map_err(|e| e.to_string())?;
    let per_frame = h * w * c;
    let split = |all: &[u8]| -> Vec<Vec<u8>> {
        (0..t)
            .map(|k| {
                all.get(k * per_frame..(k + 1) * per_frame)
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default()
            })
            .collect()
    };
    let data = match readonly.as_slice() {
        Ok(slice) => split(slice),
        // Strided: copied in C order first.
        Err(_) => split(&readonly.as_array().iter().copied().collect::<Vec<u8>>()),
    };
    let channels = if c == 1 { 1 } else { 3 };
    Ok(data
        .into_iter()
        .map(|data| Pixels {
            width,
            height,
            channels,
            data,
        })
        .collect())
}
