//! The checks the fuzz targets run on each input, and the helpers that build
//! sealed msgpack files and seeds. They live in the workspace's
//! `gulp-test-support` crate (`fuzz_checks`, `trailer`), so that gulp-format's
//! and gulp-io's `fuzz_regressions` tests replay saved inputs through the
//! very same code.

pub use gulp_test_support::fuzz_checks::format::*;
pub use gulp_test_support::fuzz_checks::io::{
    JPEG_OPTION_BYTES, check_chunk_read, check_jpeg_decode, check_random_ops, chunk_read_seeds,
    jpeg_decode_inputs, jpeg_options, random_ops_seeds,
};
pub use gulp_test_support::trailer::{seal, unseal};

/// The most a single allocation of Rust code may take in the fuzz targets.
///
/// libFuzzer's `-malloc_limit_mb` needs the sanitizers' malloc hooks, which
/// a `--sanitizer none` build does not have, and `-rss_limit_mb` misses a
/// zeroed allocation that is never written. The targets' inputs are small
/// and `jpeg_decode` decodes at most 2^18 pixels, so anything this large is
/// an allocation sized by an unchecked number from the input: the process
/// aborts, and libFuzzer saves the input as a crash.
pub const ALLOCATION_LIMIT: usize = 256 << 20;

struct Limited;

// SAFETY: forwards to the system allocator unchanged; only refuses to
// return from an oversized request.
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        check(layout.size());
        // SAFETY: the caller's contract is passed on.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        check(layout.size());
        // SAFETY: as above.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

fn check(size: usize) {
    if size > ALLOCATION_LIMIT {
        // No formatting (it would allocate): a fixed message, then abort.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"gulp fuzz: an allocation over ALLOCATION_LIMIT\n",
        );
        std::process::abort();
    }
}

#[global_allocator]
static ALLOCATOR: Limited = Limited;
