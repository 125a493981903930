//! A counting global allocator for the allocation-limit tests of gulp-format
//! and gulp-io (`alloc_limits.rs`): it forwards to the system allocator and
//! records the peak of live bytes.
//!
//! A global allocator is declared by the binary that uses it, so each test
//! declares its own static:
//!
//! ```
//! use gulp_test_support::counting_alloc::{Counting, peak_during};
//!
//! #[global_allocator]
//! static ALLOCATOR: Counting = Counting;
//!
//! fn main() {
//!     let (buffer, peak) = peak_during(|| vec![0u8; 1 << 20]);
//!     assert!(peak >= buffer.len());
//! }
//! ```
//!
//! [`peak_during`] fails in a binary that does not, rather than measure
//! nothing.
// Implementing an allocator is unsafe; only these tests do it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The allocator: the system's, counting.
pub struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The tests of a binary hold this while they measure, so that the peak is
/// their own.
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

// SAFETY: forwards every call to the system allocator unchanged; the
// counters are atomics that never affect what is returned.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Peak bytes allocated (above what was live before) while running `f`.
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    // The test harness holds memory by now, so nothing counted means that
    // `Counting` is not the global allocator and every peak would be 0.
    assert!(
        base > 0,
        "declare `#[global_allocator] static ALLOCATOR: Counting = Counting;` in the test"
    );
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed) - base)
}
