//! No allocation is sized by a number taken from a file: a hostile meta that
//! declares huge lengths makes the reader allocate in proportion to what it
//! actually reads, not to what the file claims. A counting global allocator
//! measures the peak.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_format::read_meta;
use gulp_test_support::counting_alloc::{Counting, ONE_AT_A_TIME, peak_during};
use gulp_test_support::trailer::seal;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn header(n_items: u8, n_frames: u8) -> Vec<u8> {
    let mut b = vec![0x95, 0xa8];
    b.extend_from_slice(b"gulpmeta");
    b.extend_from_slice(&[1, 0, n_items, n_frames]);
    b
}

/// One item whose meta_data is `depth` lists nested, each declaring as many
/// elements as there are bytes left after it, over `filler` nil bytes.
fn nested_claims(depth: usize, filler: usize) -> Vec<u8> {
    let blob_len = 1 + depth * 5 + filler + 1;
    let mut blob = vec![0x92];
    for level in 0..depth {
        let left = blob_len - 1 - (level + 1) * 5;
        blob.push(0xdd);
        blob.extend_from_slice(&(left as u32).to_be_bytes());
    }
    blob.extend(std::iter::repeat_n(0xc0, filler));
    blob.push(0x80);
    assert_eq!(blob.len(), blob_len);
    let mut content = header(1, 0);
    content.extend_from_slice(&[0x91, 0x93, 0xa1, b'a', 0, 0xce]);
    content.extend_from_slice(&(blob_len as u32).to_be_bytes());
    content.extend_from_slice(&[0xc4, 0, 0xc0, 0xc6]);
    content.extend_from_slice(&(blob_len as u32).to_be_bytes());
    content.extend_from_slice(&blob);
    seal(content)
}

#[test]
fn nested_length_claims_do_not_reserve_memory() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 1000 levels over 64 KiB: reserving what each level declares would be
    // 1000 × 64 Ki elements, gigabytes.
    let file = nested_claims(1000, 64 << 10);
    let (result, peak) = peak_during(|| read_meta(&file));
    let err = result.unwrap_err();
    assert!(err.to_string().contains("bytes needed"), "{err}");
    assert!(
        peak < 32 << 20,
        "{} KiB allocated for a {} KiB file",
        peak >> 10,
        file.len() >> 10
    );
}

#[test]
fn huge_declared_sizes_in_a_tiny_file_allocate_little() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/bad/meta");
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let (result, peak) = peak_during(|| read_meta(&bytes));
        assert!(result.is_err(), "{}", path.display());
        assert!(
            peak < 1 << 20,
            "{}: {} KiB allocated",
            path.display(),
            peak >> 10
        );
        checked += 1;
    }
    assert!(checked > 40);
}
