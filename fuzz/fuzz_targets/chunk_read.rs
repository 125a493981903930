//! A chunk pair from the input (meta as it is, sealed msgpack content, or a
//! frame description written as JSON or msgpack; the rest is the data file)
//! is written to a directory and read through `GulpDirectory` and
//! `ChunkReader`: every frame reads exactly when its record is valid, and
//! then gives the bytes the meta points at.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gulp_format_fuzz::check_chunk_read(data));
