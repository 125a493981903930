//! Zero-copy views of a chunk's memory map, as Python `memoryview`s.
//!
//! abi3 before Python 3.11 has no buffer protocol for extension classes, so
//! the view is a read-only numpy array over the mapped bytes whose base
//! object holds the directory (and with it the map); a `memoryview` of that
//! array, and every slice of it, keeps the map alive for as long as Python
//! uses it.

#![allow(unsafe_code)]

use std::sync::Arc;

use gulp_io::GulpDirectory;
use ndarray::ArrayView1;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyMemoryView;

/// Owns the directory while numpy arrays view its maps.
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct MapOwner {
    _dir: Arc<GulpDirectory>,
}

/// A read-only `memoryview` of `bytes`, which must lie inside one of the
/// memory maps that `dir` owns.
pub(crate) fn map_view<'py>(
    py: Python<'py>,
    dir: &Arc<GulpDirectory>,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyMemoryView>> {
    let owner = Bound::new(
        py,
        MapOwner {
            _dir: Arc::clone(dir),
        },
    )?;
    let view = ArrayView1::from(bytes);
    // SAFETY: `bytes` is part of a memory map held by a `ChunkReader` that
    // `dir` owns (readers are created once and never dropped before the
    // directory), and the map is never unmapped or written while the
    // directory lives. The array's base object is `owner`, which holds an
    // `Arc` of the directory, so the memory outlives the array and every
    // view of it. The array is made read-only before Python sees it: the map
    // is read-only and a write would fault.
    let array = unsafe { PyArray1::<u8>::borrow_from_array(&view, owner.into_any()) };
    array.call_method("setflags", (), Some(&[("write", false)].into_py_dict(py)?))?;
    PyMemoryView::from(&array.into_any())
}

use pyo3::types::IntoPyDict;
