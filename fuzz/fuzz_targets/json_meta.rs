//! Arbitrary bytes through the GulpIO JSON meta parser; what parses must
//! round-trip through JSON and through msgpack unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gulp_format_fuzz::check_json(data));
