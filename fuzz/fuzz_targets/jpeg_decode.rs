//! Option bytes (codec, colour mode, DCT, upsampling, strictness, scale,
//! crop) then a JPEG, decoded with gulp-io (libjpeg-turbo or zune-jpeg):
//! failures are `Decode` errors, successes have the promised shape and are
//! the same every time, through every entry point, cropped or not.
#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;

static HOOK: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    // libfuzzer-sys's panic hook aborts on every panic, even one caught
    // inside the code under test: gulp-io catches zune-jpeg's panics on
    // hostile frames and turns them into decoding errors, which is the
    // behaviour to test. The default hook only prints; a panic that
    // reaches the fuzz target is still an abort (libfuzzer-sys aborts when
    // its catch_unwind sees one), so no finding is lost.
    HOOK.call_once(|| {
        let _ = std::panic::take_hook();
    });
    gulp_format_fuzz::check_jpeg_decode(data)
});
