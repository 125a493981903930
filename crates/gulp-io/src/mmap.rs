//! The crate's one `unsafe`: memory-mapping a data file or an index file.

use std::fs::File;

use memmap2::Mmap;

/// Maps `file` read-only, or `None` when it is empty or mapping fails (the
/// caller then reads with plain I/O).
#[allow(unsafe_code)]
pub(crate) fn map(file: &File, len: u64) -> Option<Mmap> {
    if len == 0 {
        return None;
    }
    // SAFETY: the map is read-only and lives inside a ChunkReader that hands
    // out slices borrowed from it. Data files are never modified in place by
    // gulp (a writer builds a new file under a temporary name and renames it
    // over, which leaves this mapping on the old inode), so the bytes cannot
    // change under us unless another program truncates or rewrites the file
    // in place, which the format forbids. Every slice is bounds-checked
    // against the length the map was made with.
    unsafe { Mmap::map(file) }.ok()
}

/// Maps a directory's index file read-only, or `None` when it is empty or
/// mapping fails.
#[allow(unsafe_code)]
pub(crate) fn map_index(file: &File, len: u64) -> Option<Mmap> {
    if len == 0 {
        return None;
    }
    // SAFETY: read-only, and index files are never modified in place: one
    // is written under a temporary name and renamed over the old, which
    // leaves this mapping on the old inode. `DirIndex::parse` checks the
    // whole file (checksum, every section's bounds) before any slice of it
    // is used, and every access is bounds-checked.
    unsafe { Mmap::map(file) }.ok()
}
