//! Arbitrary bytes through the msgpack meta parser; what parses must
//! round-trip unchanged. Random bytes rarely get past the CRC-32 fingerprint:
//! `msgpack_meta_sealed` covers the sections behind it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gulp_format_fuzz::check_msgpack(data));
