//! Pixel buffers recycled between decoded frames.
//!
//! A frame of 0.3 MP is a 0.9 MB array; allocated fresh each time, glibc
//! hands back memory that the kernel must fault in and zero page by page
//! (and trims it again when an item's frames are freed), which costs about
//! 15 % of a decode. Arrays made here own a pooled buffer and give it back
//! when numpy frees them, so a training loop decodes into memory that is
//! already mapped. The pool holds up to three times what the largest of the
//! last calls decoded (an item's frames), between [`MIN_POOL_BYTES`] and
//! [`MAX_POOL_BYTES`]: a dataset's items come in several frame sizes, and a
//! buffer serves frames from half its size to its size, so the pool must
//! keep the buffers of the recent sizes, not only one item's worth (on the
//! comparison corpus, 8 frame sizes, an item's worth let half the frames
//! miss the pool and be allocated and zeroed again). It is only ever
//! `try_lock`ed, so a fork while another thread holds the lock cannot
//! deadlock the child (it allocates instead).
//!
//! A call that decodes more than [`ITEM_BYTES`] of same-sized frames (a
//! long item: 795 frames of 768×576 are 1 GB) decodes them into one
//! anonymous mapping instead ([`take_item`]): one allocation, frames written
//! one after another. The arrays are views of it;
//! when the last is freed the mapping is kept as the one spare for the next
//! such call, or unmapped if a spare is kept already. The steady state of a
//! loop over long items is thus the item in use and at most one spare, not
//! the per-frame pool's up to [`MAX_POOL_BYTES`] on top.

#![allow(unsafe_code)]

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Mutex;

use gulp_codec::Shape;
#[cfg(target_os = "linux")]
use memmap2::{Advice, RemapOptions};
use memmap2::{MmapMut, MmapOptions};
use ndarray::{ArrayView2, ArrayView3};
use numpy::{PyArray2, PyArray3};
use pyo3::prelude::*;

/// The least the pool may keep for reuse.
pub(crate) const MIN_POOL_BYTES: usize = 32 << 20;
/// The most the pool may keep for reuse, whatever the calls decode.
pub(crate) const MAX_POOL_BYTES: usize = 512 << 20;
/// Calls decoding more than this (of frames of one size) use one mapping.
pub(crate) const ITEM_BYTES: usize = 8 << 20;

/// The mapping of the last long item whose arrays were all freed.
static SPARE: Mutex<Option<MmapMut>> = Mutex::new(None);

/// A writable anonymous mapping of at least `len` bytes for one call's
/// frames, its pages already in place (the decoder then writes without
/// faulting page by page): the spare when it is large enough; else the
/// spare grown to `len` (its pages kept, the new ones put in place at
/// once), so that the process never holds more than the largest item it
/// decodes, as gulpio2's peak; else a new mapping, populated as it is made.
pub(crate) fn take_item(len: usize) -> std::io::Result<MmapMut> {
    // The process is at its largest while a long item is alive: the
    // per-frame buffers kept for short calls are given back first.
    let kept = POOL.try_lock().ok().map(|mut pool| {
        pool.bytes = 0;
        pool.limit = MIN_POOL_BYTES;
        std::mem::take(&mut pool.free)
    });
    drop(kept);
    let spare = SPARE.try_lock().ok().and_then(|mut spare| spare.take());
    if let Some(mut map) = spare {
        if map.len() >= len {
            return Ok(map);
        }
        if grow(&mut map, len) {
            return Ok(map);
        }
        // Not grown (the spare is as it was): unmapped here.
    }
    // No huge pages: with the kernel's usual `defrag = madvise`, faulting
    // in 2 MB pages compacts memory on the spot; a first pass over long
    // items ran at 608 frames/s with them, 913 without (the same once the
    // spare serves: 1,244 against 1,256). `MAP_POPULATE` puts the pages in
    // place in one call rather than on a fault per 4 kB page as the decoder
    // first writes each (a first pass over the mixed-shapes set: see
    // docs/benchmarks.md). It holds no more than the decoder would write:
    // the mapping is the item's frames, every byte of which is decoded
    // (unless a frame turns out to be of another size: then it is dropped).
    let map = MmapOptions::new().len(len.max(1)).populate().map_anon()?;
    Ok(map)
}

/// Grows the spare `map` to `len` bytes in place, or where the kernel moves
/// it, keeping its pages and putting the new ones in place at once.
#[cfg(target_os = "linux")]
fn grow(map: &mut MmapMut, len: usize) -> bool {
    let old = map.len();
    // SAFETY: the spare is `take_item`'s alone: no array views it (it
    // became the spare when its last one was freed), and it goes to the
    // caller only after the remap, so no pointer into its old place
    // survives a move.
    if unsafe { map.remap(len, RemapOptions::new().may_move(true)) }.is_err() {
        return false;
    }
    // Best effort: before Linux 5.14 the new pages fault in as written.
    let _ = map.advise_range(Advice::PopulateWrite, old, len - old);
    true
}

#[cfg(not(target_os = "linux"))]
fn grow(_map: &mut MmapMut, _len: usize) -> bool {
    false
}

/// Keeps `map` as the spare (unmapping the one it replaces).
fn give_item(map: MmapMut) {
    let old = match SPARE.try_lock() {
        Ok(mut spare) => spare.replace(map),
        Err(_) => Some(map),
    };
    drop(old); // unmapped here, unlocked
}

/// Owns the mapping of one call's frames while numpy arrays view it.
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct ItemPixels {
    map: Mutex<Option<MmapMut>>,
    ptr: NonNull<u8>,
}

// SAFETY: the arrays only read and write through `ptr`, into the mapping
// that `map` keeps alive; Rust touches the mapping only in `drop`.
unsafe impl Send for ItemPixels {}
// SAFETY: as for `Send`: shared references only hand out `ptr`, and the
// mapping's bytes are the arrays' to read and write, as numpy's own are.
unsafe impl Sync for ItemPixels {}

impl Drop for ItemPixels {
    fn drop(&mut self) {
        let map = self
            .map
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(map) = map {
            give_item(map);
        }
    }
}

/// Frames decoded one after another into `map`, each `shape`, as a list of
/// `count` numpy arrays that view it (writeable) and keep it mapped.
pub(crate) fn item_arrays<'py>(
    py: Python<'py>,
    mut map: MmapMut,
    shape: Shape,
    count: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    assert!(
        shape.len() * count <= map.len(),
        "decoded frames larger than their mapping"
    );
    let ptr = NonNull::new(map.as_mut_ptr()).unwrap_or(NonNull::dangling());
    let owner = Bound::new(
        py,
        ItemPixels {
            map: Mutex::new(Some(map)),
            ptr,
        },
    )?;
    (0..count)
        .map(|k| {
            // SAFETY: frame k's `shape.len()` bytes lie inside the mapping
            // (checked above), which `owner`, each array's base object,
            // keeps mapped and never moves until every array is gone.
            let at = unsafe { owner.get().ptr.as_ptr().add(k * shape.len()) };
            // SAFETY: `at` starts `shape.len()` bytes of the mapping (as
            // above), and `owner`, the array's base, keeps them mapped.
            unsafe { view_array(at, shape, owner.clone().into_any()) }
        })
        .collect()
}

/// A numpy array of `shape` over the bytes at `ptr`, kept alive by `base`.
///
/// # Safety
/// `ptr` must point to `shape.len()` initialised bytes that stay allocated
/// and unmoved while `base` lives.
unsafe fn view_array<'py>(
    ptr: *mut u8,
    shape: Shape,
    base: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: as the caller promises; the array's base object is `base`.
    let array = unsafe {
        if shape.channels == 1 {
            let view = ArrayView2::from_shape_ptr((shape.height, shape.width), ptr.cast_const());
            PyArray2::<u8>::borrow_from_array(&view, base).into_any()
        } else {
            let view = ArrayView3::from_shape_ptr(
                (shape.height, shape.width, shape.channels),
                ptr.cast_const(),
            );
            PyArray3::<u8>::borrow_from_array(&view, base).into_any()
        }
    };
    Ok(array)
}

struct Pool {
    free: Vec<Vec<u8>>,
    bytes: usize,
    /// What the pool may hold now: what recent calls decoded.
    limit: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    bytes: 0,
    limit: MIN_POOL_BYTES,
});

/// Tells the pool that one call decoded `bytes` of frames, all alive at once
/// in the caller's hands: the pool then keeps up to three times that much
/// (the limit decays by a 64th per call towards smaller calls).
pub(crate) fn note_call(bytes: usize) {
    if let Ok(mut pool) = POOL.try_lock() {
        let decayed = pool.limit - pool.limit / 64;
        pool.limit = bytes
            .saturating_mul(3)
            .max(decayed)
            .clamp(MIN_POOL_BYTES, MAX_POOL_BYTES);
    }
}

/// A buffer of at least `len` bytes: a pooled one of about that size (its
/// stale contents are overwritten by the decoder, and it keeps its whole
/// length, all initialised, so that reusing it never zeroes anything), else a
/// new zeroed one of `len` bytes.
pub(crate) fn take(len: usize) -> Vec<u8> {
    let reused = POOL.try_lock().ok().and_then(|mut pool| {
        // The most recently returned buffer that fits: the likeliest to
        // be still in the CPU's caches.
        let best = pool
            .free
            .iter()
            .rposition(|v| v.len() >= len && v.len() / 2 <= len)?;
        let v = pool.free.remove(best);
        pool.bytes -= v.capacity();
        Some(v)
    });
    match reused {
        Some(mut v) => {
            // Pooled buffers keep their length equal to their capacity.
            let cap = v.capacity();
            v.resize(cap, 0);
            v
        }
        None => vec![0; len],
    }
}

/// Gives a buffer back for reuse (or frees it when the pool is full).
pub(crate) fn give(v: Vec<u8>) {
    let cap = v.capacity();
    if cap == 0 {
        return;
    }
    let mut evicted = Vec::new();
    if let Ok(mut pool) = POOL.try_lock() {
        if cap > pool.limit / 4 {
            return;
        }
        while pool.bytes + cap > pool.limit && !pool.free.is_empty() {
            let old = pool.free.remove(0);
            pool.bytes -= old.capacity();
            evicted.push(old);
        }
        pool.bytes += cap;
        pool.free.push(v);
    }
    // `evicted` (and `v` when the lock was busy) are freed here, unlocked.
}

/// Owns a pooled buffer while a numpy array uses it; returns it to the pool
/// when numpy drops the array.
#[pyclass(frozen, module = "gulp._gulp")]
pub(crate) struct PooledPixels {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
}

// SAFETY: the buffer is plain bytes owned by this object alone; Rust never
// reads or writes it until `drop`, when no array refers to it any more.
unsafe impl Send for PooledPixels {}
// SAFETY: as for `Send`: a shared reference gives access to no byte of the
// buffer; only the array over it reads and writes it.
unsafe impl Sync for PooledPixels {}

impl Drop for PooledPixels {
    fn drop(&mut self) {
        // SAFETY: ptr/len/cap come from a `Vec<u8>` that `frame_array` took
        // apart and nothing else freed.
        let v = unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.cap) };
        give(v);
    }
}

/// The first `shape.len()` bytes of `buf` as a numpy array `H×W×3` or
/// `H×W` (writeable), owning all of `buf` without a copy.
pub(crate) fn frame_array<'py>(
    py: Python<'py>,
    buf: Vec<u8>,
    shape: Shape,
) -> PyResult<Bound<'py, PyAny>> {
    assert!(
        shape.len() <= buf.len(),
        "decoded shape larger than its buffer"
    );
    let mut buf = ManuallyDrop::new(buf);
    let (ptr, len, cap) = (buf.as_mut_ptr(), buf.len(), buf.capacity());
    let owner = PooledPixels {
        // A Vec's pointer is never null (dangling but non-null when empty).
        ptr: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
        len,
        cap,
    };
    let owner = Bound::new(py, owner)?;
    // SAFETY: `ptr` points to `len >= shape.len()` initialised bytes that
    // `owner` keeps allocated (and never touches) until it is dropped; the
    // array's base object is `owner`, so the array and its views cannot
    // outlive the buffer. The buffer is not reallocated meanwhile.
    unsafe { view_array(ptr, shape, owner.into_any()) }
}
