//! `Directory`: a gulp directory opened for reading.

use std::path::PathBuf;
use std::sync::Arc;

use gulp_codec::{Codec, Crop, DecodeOptions, Image, Scale, Shape};
use gulp_format::Choice;
use gulp_format::{FrameInfo, ItemMeta};
use gulp_io::{ChunkReader, GulpDirectory, ReadMode};
use gulp_store::{CacheChoice, CacheFetch, CacheOptions};
use ndarray::{Array2, Array3};
use numpy::PyArray;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView, PySlice, PyString, PyTuple};

use crate::convert::{item_to_py, to_py};
use crate::errors::{Class, io_err};
use crate::pixel_pool;
use crate::views::map_view;

/// A gulp directory opened for reading (the native side of
/// `gulp.GulpDirectory`). Opening lists the chunks and reads every meta
/// file's ids; an item's full meta is parsed when its chunk is first used.
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct Directory {
    inner: Arc<GulpDirectory>,
    /// Per chunk, a memoryview of its whole mapped data file.
    views: Vec<PyOnceLock<Py<PyMemoryView>>>,
}

/// The frames of one `read`.
enum Decoded {
    /// All in one mapping, one after another, each of `shape`.
    Item { map: memmap2::MmapMut, shape: Shape },
    /// Each in a buffer of its own (from the pool).
    Frames(Vec<(Shape, Vec<u8>)>),
}

/// Decodes frames `indices` of `id`: into one mapping when they share their
/// decoded shape and come to more than [`pixel_pool::ITEM_BYTES`] (a long item),
/// else each into a pooled buffer. The frames' bytes are read together
/// first: slices of the map locally, one coalesced request from a store.
fn decode_frames(
    reader: &ChunkReader,
    id: &str,
    records: &[(usize, FrameInfo)],
    options: &DecodeOptions,
) -> gulp_io::Result<Decoded> {
    let jpegs = reader.records_at(id, records)?;
    if let ([(first, fi), _, ..], [jpeg, ..]) = (records, jpegs.as_slice()) {
        let shape = reader.with_record(id, *first, fi.loc, jpeg, options.codec, |frame| {
            Ok(frame.header().output_shape(options))
        })?;
        let len = shape.len();
        let total = len.saturating_mul(records.len());
        if total > pixel_pool::ITEM_BYTES {
            let mut map = pixel_pool::take_item(total).map_err(|source| {
                gulp_io::Error::from(gulp_io::ErrorKind::Io {
                    op: "mapping memory for the frames of an item of",
                    path: reader.data_path().to_owned(),
                    source,
                })
            })?;
            let mut same = true;
            for (slot, ((k, fi), jpeg)) in records.iter().zip(&jpegs).enumerate() {
                let out = &mut map[slot * len..(slot + 1) * len];
                same = reader.with_record(id, *k, fi.loc, jpeg, options.codec, |frame| {
                    if frame.header().output_shape(options) != shape {
                        return Ok(false);
                    }
                    frame.decode_into(options, out)?;
                    Ok(true)
                })?;
                if !same {
                    break;
                }
            }
            if same {
                return Ok(Decoded::Item { map, shape });
            }
            // Frames of several sizes: one buffer each, below.
        }
    }
    records
        .iter()
        .zip(&jpegs)
        .map(|((k, fi), jpeg)| {
            reader.decode_record_with(id, *k, fi.loc, jpeg, options, |shape| {
                pixel_pool::take(shape.len())
            })
        })
        .collect::<gulp_io::Result<_>>()
        .map(Decoded::Frames)
}

/// How to decode, from the keyword arguments of `read` (names of the
/// options' values from gulp-io's lists).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decode_options(
    color: Option<&str>,
    dct_scale: Option<&Bound<'_, PyAny>>,
    min_size: Option<(usize, usize)>,
    region: Option<(usize, usize, usize, usize)>,
    dct: Option<&str>,
    upsampling: Option<&str>,
    strict: bool,
    codec: Option<&str>,
) -> PyResult<DecodeOptions> {
    fn named<T: Choice>(given: Option<&str>, default: T) -> PyResult<T> {
        given.map_or(Ok(default), |name| {
            T::parse_choice(name).map_err(|e| Class::InvalidSelection.err(e.to_string()))
        })
    }
    let defaults = DecodeOptions::default();
    let codec = named(codec, defaults.codec)?;
    if codec == Codec::LibjpegTurbo && !cfg!(feature = "turbojpeg") {
        return Err(Class::InvalidSelection.err("this build of gulp has no libjpeg-turbo"));
    }
    let scale = match (dct_scale, min_size) {
        (Some(s), _) => parse_scale(s)?,
        (None, Some((height, width))) => Scale::AtLeast { width, height },
        (None, None) => Scale::Full,
    };
    Ok(DecodeOptions {
        codec,
        color: named(color, defaults.color)?,
        dct: named(dct, defaults.dct)?,
        upsampling: named(upsampling, defaults.upsampling)?,
        scale,
        crop: region.map(|(x, y, width, height)| Crop {
            x,
            y,
            width,
            height,
        }),
        strict,
    })
}

/// `dct_scale=`: a fraction `"1/2"` (n/8 steps) or an int (the least
/// short edge).
fn parse_scale(s: &Bound<'_, PyAny>) -> PyResult<Scale> {
    if let Ok(text) = s.extract::<String>() {
        return Scale::parse(&text).ok_or_else(|| {
            Class::InvalidSelection.err(format!(
                "dct_scale {text:?} is not n/8 for n from 1 to 8 (e.g. '1/2', '3/8')"
            ))
        });
    }
    if let Ok(edge) = s.extract::<usize>() {
        return Ok(Scale::ShortEdge(edge));
    }
    Err(Class::InvalidSelection.err(format!(
        "dct_scale must be a fraction such as '1/2' or a short edge (int), not {}",
        s.repr()?
    )))
}

/// The frame indices `sel` selects among `n`, as gulpio2's `read_frames`
/// does: `None` is every frame, a slice slices, a list (or numpy array) is
/// explicit indices (negative from the end, repeats and any order allowed).
fn resolve(sel: Option<&Bound<'_, PyAny>>, n: usize, id: &str) -> PyResult<Option<Vec<usize>>> {
    let Some(sel) = sel.filter(|s| !s.is_none()) else {
        return Ok(None);
    };
    let len = isize::try_from(n).unwrap_or(isize::MAX);
    let n64 = i64::try_from(n).unwrap_or(i64::MAX);
    if let Ok(slice) = sel.cast::<PySlice>() {
        let ix = slice.indices(len)?;
        let mut out = Vec::with_capacity(ix.slicelength);
        let mut i = ix.start;
        for _ in 0..ix.slicelength {
            out.push(i.unsigned_abs());
            i += ix.step;
        }
        return Ok(Some(out));
    }
    let list = if sel.is_instance_of::<PyList>() {
        sel.clone()
    } else if sel.hasattr("tolist")? && sel.hasattr("dtype")? {
        // A bool array is no mask in gulpio2 (with numpy 2 indexing a list
        // by numpy.bool is a TypeError): refused rather than read as 0/1.
        if sel.getattr("dtype")?.getattr("kind")?.extract::<String>()? == "b" {
            return Err(Class::SelectionType.err(format!(
                "id {id:?}: a bool array is not a frame selection (use np.flatnonzero(mask))"
            )));
        }
        sel.call_method0("tolist")?
    } else {
        return Err(Class::SelectionType.err(format!(
            "id {id:?}: frames are selected by a slice or a list of indices, not a {}",
            sel.get_type().name()?
        )));
    };
    let mut out = Vec::new();
    for item in list.try_iter()? {
        let item = item?;
        let Ok(i) = item.extract::<i64>() else {
            return Err(Class::SelectionType.err(format!(
                "id {id:?}: frame indices must be integers, not {}",
                item.get_type().name()?
            )));
        };
        let k = if i < 0 { i.saturating_add(n64) } else { i };
        match usize::try_from(k) {
            Ok(k) if k < n => out.push(k),
            _ => {
                return Err(Class::Selection.err(format!(
                    "id {id:?}: frame index {i} is out of range for {n} frames"
                )));
            }
        }
    }
    Ok(Some(out))
}

/// Pixels as a numpy array, `H×W×3` or `H×W`, without a copy.
pub(crate) fn image_to_py(py: Python<'_>, image: Image) -> PyResult<Bound<'_, PyAny>> {
    let Image {
        height,
        width,
        channels,
        pixels,
    } = image;
    let bad = |e: ndarray::ShapeError| Class::Decode.err(e.to_string());
    Ok(if channels == 1 {
        PyArray::from_owned_array(
            py,
            Array2::from_shape_vec((height, width), pixels).map_err(bad)?,
        )
        .into_any()
    } else {
        PyArray::from_owned_array(
            py,
            Array3::from_shape_vec((height, width, channels), pixels).map_err(bad)?,
        )
        .into_any()
    })
}

impl Directory {
    /// A reader of `id`'s data file, the position of its chunk and the
    /// id's meta, parsed alone (not the chunk's: a forked worker reading
    /// items at random keeps no chunk's meta; GIL released).
    fn locate(&self, py: Python<'_>, id: &str) -> PyResult<(&ChunkReader, usize, ItemMeta)> {
        py.detach(|| {
            let (chunk, item) = self.inner.read_item(id)?;
            Ok::<_, gulp_io::Error>((self.inner.data_reader(chunk)?, chunk, item))
        })
        .map_err(io_err)
    }

    /// A reader of `id`'s data file and the records `(frame index,
    /// frame_info)` that `sel` selects, every frame for `None`.
    fn selected(
        &self,
        py: Python<'_>,
        id: &str,
        sel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(&ChunkReader, Vec<(usize, FrameInfo)>)> {
        let (reader, _, item) = self.locate(py, id)?;
        let n = item.frame_info.len();
        let indices = resolve(sel, n, id)?.unwrap_or_else(|| (0..n).collect());
        Ok((reader, records(&item, &indices)))
    }

    /// The cached memoryview of chunk `index`'s mapped data file, or `None`
    /// when the chunk is read through a file handle.
    fn chunk_view<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        reader: &ChunkReader,
    ) -> PyResult<Option<Bound<'py, PyMemoryView>>> {
        let Some(bytes) = reader.mapped_bytes() else {
            return Ok(None);
        };
        let view = self.views[index]
            .get_or_try_init(py, || map_view(py, &self.inner, bytes).map(Bound::unbind))?;
        Ok(Some(view.bind(py).clone()))
    }
}

/// The node cache `cache_dir`, `cache_limit` and `cache_fetch` ask for
/// ([`CacheOptions::resolve`]): `cache_dir=False` is no cache, `None` the
/// environment's.
pub(crate) fn cache_options(
    dir: Option<&Bound<'_, PyAny>>,
    limit: Option<&Bound<'_, PyAny>>,
    fetch: Option<&str>,
) -> PyResult<CacheChoice> {
    let fetch = match fetch {
        Some(name) => Some(
            name.parse::<CacheFetch>()
                .map_err(|e| Class::Invalid.err(e.to_string()))?,
        ),
        None => None,
    };
    let limit = match limit {
        None => None,
        Some(v) => Some(match v.extract::<u64>() {
            Ok(bytes) => bytes,
            Err(_) => {
                let text: String = v.extract().map_err(|_| {
                    Class::Invalid.err("cache_limit is a number of bytes or a size such as '50G'")
                })?;
                gulp_store::parse_byte_size(&text).ok_or_else(|| {
                    Class::Invalid.err(format!(
                        "cache_limit {text:?} is not a size (e.g. '500G', '20GiB', 1048576)"
                    ))
                })?
            }
        }),
    };
    let (off, dir) = match dir {
        None => (false, None),
        Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => {
            if v.extract::<bool>()? {
                return Err(Class::Invalid.err(
                    "cache_dir is a directory, None (GULP_CACHE_DIR, if set) or False (no cache)",
                ));
            }
            (true, None)
        }
        Some(v) => (false, Some(v.extract::<PathBuf>()?)),
    };
    let needs_dir = dir.is_none() && !off && (limit.is_some() || fetch.is_some());
    CacheOptions::resolve(off, dir, limit, fetch).map_err(|e| {
        if needs_dir {
            Class::Invalid.err(
                "cache_limit and cache_fetch need a cache directory: cache_dir, or GULP_CACHE_DIR",
            )
        } else {
            io_err(e)
        }
    })
}

#[pymethods]
impl Directory {
    /// Opens `path`. `mmap=False` reads frames through file handles instead
    /// of memory maps. A remote directory is read through the node cache
    /// `cache_dir` (limited to `cache_limit` bytes, or a size such as
    /// '50G'), else through the one `GULP_CACHE_DIR` names, if set;
    /// `cache_dir=False` reads the store every time. `cache_fetch` is what
    /// the cache fetches of data objects: 'auto', 'chunks' or 'ranges'.
    #[new]
    #[pyo3(signature = (path, mmap = true, cache_dir = None, cache_limit = None, cache_fetch = None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        mmap: bool,
        cache_dir: Option<&Bound<'_, PyAny>>,
        cache_limit: Option<&Bound<'_, PyAny>>,
        cache_fetch: Option<&str>,
    ) -> PyResult<Directory> {
        let mode = if mmap {
            ReadMode::Mmap
        } else {
            ReadMode::Buffered
        };
        let options = GulpDirectory::options()
            .read_mode(mode)
            .cache_choice(cache_options(cache_dir, cache_limit, cache_fetch)?);
        let inner = py.detach(|| options.open(&path)).map_err(io_err)?;
        let views = (0..inner.chunks().len())
            .map(|_| PyOnceLock::new())
            .collect();
        Ok(Directory {
            inner: Arc::new(inner),
            views,
        })
    }

    /// The directory's path.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_owned()
    }

    /// The number of items.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Whether an item has this id.
    fn __contains__(&self, id: &str) -> bool {
        self.inner.contains(id)
    }

    /// The number of frames of all items.
    fn n_frames(&self) -> usize {
        self.inner.n_frames()
    }

    /// `(number, data_path, meta_path)` of every chunk, in chunk order.
    fn chunk_files(&self) -> Vec<(u64, PathBuf, PathBuf)> {
        self.inner
            .chunks()
            .iter()
            .map(|c| (c.chunk, c.data_path.clone(), c.meta_path.clone()))
            .collect()
    }

    /// The number the next new chunk gets.
    fn next_chunk_number(&self) -> u64 {
        self.inner.next_chunk_number()
    }

    /// What opening noticed (orphan or temporary files), as messages.
    fn warnings(&self) -> Vec<String> {
        self.inner
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .collect()
    }

    /// Every id, chunk by chunk, in meta order.
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for id in self.inner.ids() {
            list.append(PyString::new(py, id))?;
        }
        Ok(list)
    }

    /// The ids of chunk `index`, in meta order.
    fn chunk_ids(&self, index: usize) -> PyResult<Vec<String>> {
        let chunk =
            self.inner.chunks().get(index).ok_or_else(|| {
                Class::Selection.err(format!("chunk index {index} is out of range"))
            })?;
        Ok(chunk.ids().map(str::to_owned).collect())
    }

    /// The chunk number holding `id`, or `None`.
    fn chunk_of(&self, id: &str) -> Option<u64> {
        self.inner.chunk_of(id).map(|c| c.chunk)
    }

    /// The number of frames of `id`.
    fn frame_count(&self, py: Python<'_>, id: &str) -> PyResult<usize> {
        py.detach(|| self.inner.read_item(id))
            .map(|(_, item)| item.frame_info.len())
            .map_err(io_err)
    }

    /// `meta_data[0]` of `id` (gulpio2's `gd[id][1]`), a new dict.
    fn meta<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Bound<'py, PyAny>> {
        let (_, item) = py.detach(|| self.inner.read_item(id)).map_err(io_err)?;
        match item.meta_data.first() {
            Some(v) => to_py(py, v),
            None => Err(Class::Selection.err(format!("id {id:?} has an empty meta_data list"))),
        }
    }

    /// `{"frame_info": [...], "meta_data": [...]}` of `id`.
    fn item<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Bound<'py, PyDict>> {
        let (_, item) = py.detach(|| self.inner.read_item(id)).map_err(io_err)?;
        item_to_py(py, &item)
    }

    /// The meta dict of chunk `index` (id to item dict), as gulpio2's
    /// `GulpChunk.meta_dict`.
    fn chunk_meta<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyDict>> {
        let chunk =
            self.inner.chunks().get(index).ok_or_else(|| {
                Class::Selection.err(format!("chunk index {index} is out of range"))
            })?;
        let meta = py.detach(|| chunk.meta()).map_err(io_err)?;
        let dict = PyDict::new(py);
        for (id, item) in meta.iter() {
            dict.set_item(id, item_to_py(py, item)?)?;
        }
        Ok(dict)
    }

    /// Frames of `id`, decoded to numpy arrays (`H×W×3` RGB, `H×W` gray).
    ///
    /// `sel` is `None` (every frame), a slice or a list of indices. The
    /// other arguments are the decoding options: `color` ('auto', 'rgb',
    /// 'gray'), `dct_scale` ('1/2'-style fraction or least short edge),
    /// `min_size` (least (height, width)), `region` ((x, y, width, height)
    /// of the scaled image), `dct` ('fast', 'accurate'), `upsampling`
    /// ('fast', 'smooth'), `strict` and `codec`.
    #[pyo3(signature = (id, sel = None, *, color = None, dct_scale = None, min_size = None,
                        region = None, dct = None, upsampling = None, strict = true,
                        codec = None))]
    #[allow(clippy::too_many_arguments)]
    fn read<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        sel: Option<&Bound<'py, PyAny>>,
        color: Option<&str>,
        dct_scale: Option<&Bound<'py, PyAny>>,
        min_size: Option<(usize, usize)>,
        region: Option<(usize, usize, usize, usize)>,
        dct: Option<&str>,
        upsampling: Option<&str>,
        strict: bool,
        codec: Option<&str>,
    ) -> PyResult<Bound<'py, PyList>> {
        let options = decode_options(
            color, dct_scale, min_size, region, dct, upsampling, strict, codec,
        )?;
        let (reader, records) = self.selected(py, id, sel)?;
        let decoded = py
            .detach(|| decode_frames(reader, id, &records, &options))
            .map_err(io_err)?;
        let list = PyList::empty(py);
        match decoded {
            Decoded::Item { map, shape } => {
                for array in pixel_pool::item_arrays(py, map, shape, records.len())? {
                    list.append(array)?;
                }
            }
            Decoded::Frames(frames) => {
                pixel_pool::note_call(frames.iter().map(|(_, buf)| buf.capacity()).sum());
                for (shape, buf) in frames {
                    list.append(pixel_pool::frame_array(py, buf, shape)?)?;
                }
            }
        }
        Ok(list)
    }

    /// The JPEG bytes of the selected frames of `id`: read-only
    /// `memoryview`s of the memory map (no copy), or `bytes` when the
    /// directory was opened with `mmap=False`.
    #[pyo3(signature = (id, sel = None))]
    fn raw<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        sel: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (reader, index, item) = self.locate(py, id)?;
        let n = item.frame_info.len();
        let indices = resolve(sel, n, id)?;
        let list = PyList::empty(py);
        let Some(view) = self.chunk_view(py, index, reader)? else {
            // Read through a file handle or from a store: the frames in one
            // read (one request from a store), as bytes.
            let indices = indices.unwrap_or_else(|| (0..n).collect());
            let records = records(&item, &indices);
            let frames = py
                .detach(|| reader.records_at(id, &records))
                .map_err(io_err)?;
            for bytes in frames {
                list.append(PyBytes::new(py, &bytes))?;
            }
            return Ok(list);
        };
        let mut push = |k: usize| -> PyResult<()> {
            let fi = &item.frame_info[k];
            let (start, end) = reader.jpeg_range(id, k, fi).map_err(io_err)?;
            let (start, end) = (to_isize(start)?, to_isize(end)?);
            list.append(view.get_item(slice(py, start, end)?)?)
        };
        match indices {
            None => (0..n).try_for_each(&mut push)?,
            Some(ix) => ix.into_iter().try_for_each(&mut push)?,
        }
        Ok(list)
    }

    /// The JPEG bytes of the selected frames of `id` as `bytes` (copies),
    /// what gulpio2 hands a custom `jpeg_decoder`.
    #[pyo3(signature = (id, sel = None))]
    fn raw_bytes<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        sel: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (reader, records) = self.selected(py, id, sel)?;
        let frames = py
            .detach(|| reader.records_at(id, &records))
            .map_err(io_err)?;
        let list = PyList::empty(py);
        for bytes in frames {
            list.append(PyBytes::new(py, &bytes))?;
        }
        Ok(list)
    }

    /// Shape `(height, width, channels)` of each selected frame, from the
    /// JPEG headers (nothing is decoded).
    #[pyo3(signature = (id, sel = None))]
    fn shapes<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        sel: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (reader, records) = self.selected(py, id, sel)?;
        let codec = DecodeOptions::default().codec;
        let shapes = py
            .detach(|| -> gulp_io::Result<Vec<(usize, usize, usize)>> {
                let jpegs = reader.records_at(id, &records)?;
                records
                    .iter()
                    .zip(&jpegs)
                    .map(|((k, fi), jpeg)| {
                        let h =
                            reader.with_record(id, *k, fi.loc, jpeg, codec, |f| Ok(*f.header()))?;
                        Ok((h.height, h.width, if h.gray { 1 } else { 3 }))
                    })
                    .collect()
            })
            .map_err(io_err)?;
        let list = PyList::empty(py);
        for s in shapes {
            list.append(PyTuple::new(py, [s.0, s.1, s.2])?)?;
        }
        Ok(list)
    }
}

/// The records `(frame index, frame_info)` of frames `indices` of `item`
/// (indices that [`resolve`] checked against its frame count).
fn records(item: &ItemMeta, indices: &[usize]) -> Vec<(usize, FrameInfo)> {
    indices
        .iter()
        .filter_map(|&k| item.frame_info.get(k).map(|fi| (k, *fi)))
        .collect()
}

/// `slice(start, end)`. Not `PySlice::new`: pyo3 0.30.1's leaks its
/// integer arguments (`PySlice_New` does not steal the references it is
/// given), 32 bytes per offset above 256, which is every raw frame read.
fn slice(py: Python<'_>, start: isize, end: isize) -> PyResult<Bound<'_, PyAny>> {
    py.get_type::<PySlice>().call1((start, end))
}

fn to_isize(v: u64) -> PyResult<isize> {
    isize::try_from(v).map_err(|_| Class::Format.err(format!("offset {v} does not fit in memory")))
}

/// The labels of a directory's `label2idx.json` as `(label, index)` pairs in
/// file order, or `None` if it has none (local or `s3://`); the rule of
/// `gulp_io::LabelIndex` applies (an error names the file).
#[pyfunction]
pub(crate) fn read_labels(py: Python<'_>, path: PathBuf) -> PyResult<Option<Vec<(String, i64)>>> {
    let labels = py
        .detach(|| gulp_io::LabelIndex::read(&path))
        .map_err(io_err)?;
    Ok(labels.map(|labels| {
        labels
            .iter()
            .map(|(label, index)| (label.to_owned(), index))
            .collect()
    }))
}
