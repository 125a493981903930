//! The input is the content of a msgpack meta file (header and sections); the
//! target adds a correct trailer (and a header, when the input has none), so
//! every input passes the fingerprint and reaches the section parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gulp_format_fuzz::check_msgpack(&gulp_format_fuzz::sealed(data)));
