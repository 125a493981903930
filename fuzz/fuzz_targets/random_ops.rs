//! A sequence of writer and reader operations decoded from the input, run on
//! a real directory and checked against an in-memory model after each reopen.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gulp_format_fuzz::check_random_ops(data));
