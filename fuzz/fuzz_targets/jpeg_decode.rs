//! Option bytes (codec, colour mode, DCT, upsampling, strictness, scale,
//! crop) then a JPEG, decoded with gulp-io (libjpeg-turbo or zune-jpeg):
//! failures are `Decode` errors, successes have the promised shape and are
//! the same every time, through every entry point, cropped or not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| gulp_format_fuzz::check_jpeg_decode(data));
