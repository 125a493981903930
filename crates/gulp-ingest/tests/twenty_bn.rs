//! gulpio2's own integration scenario (system_tests.py), with the real ffmpeg.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use std::fs;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gulp_codec::{ColorMode, decode_jpeg};
use gulp_ingest::adapters::Dataset;
use gulp_ingest::yuv::Yuv420;
use gulp_ingest::{FrameOptions, IngestOptions, SubsamplingChoice, ingest, video};
use gulp_io::{GulpDirectory, Selection};
use gulp_test_support::media;

fn videos_json(path: &Path, n: usize) {
    let items: Vec<String> = (0..n)
        .map(|i| format!("{{\"id\": \"{i}\", \"template\": \"ANY_{i}\"}}"))
        .collect();
    fs::write(path, format!("[{}]", items.join(", "))).unwrap();
}

fn all_pixels(gulp: &GulpDirectory, id: &str, sel: &str) -> Vec<Vec<u8>> {
    gulp.frames(id, &Selection::parse(sel).unwrap())
        .unwrap()
        .iter()
        .map(|f| decode_jpeg(f, ColorMode::Auto).unwrap().pixels)
        .collect()
}

#[test]
fn gulpio2_integration_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let source = media::black_white_video(tmp.path());
    let videos = tmp.path().join("videos");
    for i in 0..25 {
        let d = videos.join(i.to_string());
        fs::create_dir_all(&d).unwrap();
        fs::copy(&source, d.join(format!("source_{i}.mp4"))).unwrap();
    }
    let json = tmp.path().join("videos.json");
    videos_json(&json, 23);
    let out = tmp.path().join("out");
    // gulpio2's JPEG layout (4:4:4; gulp's default for videos is 4:2:0,
    // which `video_frames_keep_their_colours` covers).
    let opts = IngestOptions {
        items_per_chunk: 10,
        workers: 2,
        frames: FrameOptions {
            subsampling: SubsamplingChoice::S444,
            ..FrameOptions::default()
        },
        ..IngestOptions::default()
    };
    let adapter = Dataset::twenty_bn_json(&json, &videos, &out, "template").unwrap();
    let report = ingest(&adapter, &out, &opts, &mut |_| {}).unwrap();
    assert_eq!(report.items, 23);
    assert_eq!(report.frames, 23 * 80);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.chunks, vec![0, 1, 2]);

    // The same files as gulpio2 writes; label2idx.json byte-for-byte the
    // same size (302 bytes in gulpio2's test).
    assert_eq!(
        media::names(&out),
        [
            "data_0.gulp",
            "data_1.gulp",
            "data_2.gulp",
            "label2idx.json",
            "meta_0.gmeta",
            "meta_1.gmeta",
            "meta_2.gmeta"
        ]
    );
    assert_eq!(fs::metadata(out.join("label2idx.json")).unwrap().len(), 302);
    if gulp_ingest::frames::ENCODER == "libjpeg-turbo" {
        // The encoder gulpio2 uses (through simplejpeg), with its settings:
        // the very data file sizes of gulpio2's test.
        let sizes: Vec<u64> = (0..3)
            .map(|n| {
                fs::metadata(out.join(format!("data_{n}.gulp")))
                    .unwrap()
                    .len()
            })
            .collect();
        assert_eq!(sizes, [739_200, 739_200, 221_760]);
    }

    let gulp = GulpDirectory::open(&out).unwrap();
    // Same ids per chunk as gulpio2: slices [0:10], [10:20], [20:23].
    for (chunk, ids) in [(0, 0..10), (1, 10..20), (2, 20..23)] {
        let want: Vec<String> = ids.map(|i| i.to_string()).collect();
        let got: Vec<String> = gulp
            .reader(chunk)
            .unwrap()
            .meta()
            .ids()
            .map(str::to_owned)
            .collect();
        assert_eq!(got, want, "chunk {chunk}");
    }
    let meta = gulp.meta_data("7").unwrap();
    assert_eq!(meta.get("label").and_then(|v| v.as_str()), Some("ANY_7"));
    assert_eq!(meta.get("id").and_then(|v| v.as_str()), Some("7"));
    // Labels sorted as strings: ANY_0, ANY_1, ANY_10..ANY_19, ANY_2, ANY_20,
    // ANY_21, ANY_22, ANY_3, ..., ANY_7 = 20.
    assert_eq!(meta.get("idx").and_then(|v| v.as_i64()), Some(20));

    // Pixel-exact black/white alternation (gulpio2: assert_array_equal).
    let frames = all_pixels(&gulp, "0", ":");
    assert_eq!(frames.len(), 80);
    for (i, f) in frames.iter().enumerate() {
        let want = if i % 2 == 0 { 0 } else { 255 };
        assert!(
            f.iter().all(|&p| p == want),
            "frame {i} of id 0 is not {want}"
        );
        assert_eq!(f.len(), 100 * 100 * 3);
    }
    assert!(
        all_pixels(&gulp, "11", "0::2")
            .iter()
            .all(|f| f.iter().all(|&p| p == 0))
    );
    assert!(
        all_pixels(&gulp, "21", "1::2")
            .iter()
            .all(|f| f.iter().all(|&p| p == 255))
    );
    drop(gulp);

    // Extension with ids 23 and 24: a new chunk 3, label2idx.json grows to
    // 330 bytes (as in gulpio2) and keeps the old indices.
    let before = fs::read_to_string(out.join("label2idx.json")).unwrap();
    videos_json(&json, 25);
    let adapter = Dataset::twenty_bn_json(&json, &videos, &out, "template").unwrap();
    let report = ingest(&adapter, &out, &opts, &mut |_| {}).unwrap();
    assert_eq!((report.items, report.already_present), (2, 23));
    assert_eq!(report.chunks, vec![3]);
    let after = fs::read_to_string(out.join("label2idx.json")).unwrap();
    assert_eq!(after.len(), 330);
    assert!(after.starts_with(before.trim_end_matches('}')));
    assert!(after.ends_with(", \"ANY_23\": 23, \"ANY_24\": 24}"));
    let gulp = GulpDirectory::open(&out).unwrap();
    assert_eq!(gulp.len(), 25);
    assert_eq!(gulp.chunk_of("24").unwrap().chunk, 3);
    assert_eq!(all_pixels(&gulp, "23", ":").len(), 80);

    // A third run finds nothing to do and writes nothing.
    let report = ingest(&adapter, &out, &opts, &mut |_| {}).unwrap();
    assert_eq!((report.items, report.already_present), (0, 25));
    assert!(report.chunks.is_empty());
}

/// The frame count at a rate equals what gulpio2's burst command gives.
#[test]
fn frame_count_matches_gulpio2_burst() {
    let tmp = tempfile::tempdir().unwrap();
    let bw = media::black_white_video(tmp.path());
    let pattern = tmp.path().join("pattern.webm");
    media::test_video(&pattern, "64x48", 25, 3.3);
    let late = tmp.path().join("late.mp4");
    media::late_start_video(&late, "64x48", 15, 10.3);
    for (video, rate) in [
        (&late, Some(8.0)),
        (&late, None),
        (&bw, Some(8.0)),
        (&bw, Some(5.0)),
        (&bw, None),
        (&pattern, Some(8.0)),
        (&pattern, Some(12.5)),
        (&pattern, None),
    ] {
        let burst = tempfile::tempdir().unwrap();
        let target = burst.path().join("%010d.jpg");
        let mut args = vec!["-i", video.to_str().unwrap()];
        let rate_text = rate.map(|r: f64| r.to_string());
        if let Some(r) = &rate_text {
            args.extend(["-r", r.as_str()]);
        }
        args.extend(["-q:v", "1", "-f", "image2", target.to_str().unwrap()]);
        media::ffmpeg(&args);
        let bursted = fs::read_dir(burst.path()).unwrap().count();
        let mut decoded = 0;
        video::decode_video(video, rate, None, &mut |_| {
            decoded += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(decoded, bursted, "{} at {rate:?}", video.display());
        assert!(decoded > 0);
    }
}

/// ffmpeg decodes the same frames on one thread as on several (ingest picks
/// the thread count from the number of workers).
#[test]
fn decode_threads_do_not_change_frames() {
    let tmp = tempfile::tempdir().unwrap();
    // H.264 with B-frames, which frame threading decodes out of order.
    let clip = tmp.path().join("clip.mp4");
    media::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=320x240:rate=25:duration=3",
        "-pix_fmt",
        "yuv420p",
        "-bf",
        "3",
        clip.to_str().unwrap(),
    ]);
    let decode = |threads: Option<u32>| {
        let mut frames = Vec::new();
        video::decode_video(
            &clip,
            Some(8.0),
            threads.and_then(NonZeroU32::new),
            &mut |frame| {
                frames.push((frame.width, frame.height, frame.data));
                Ok(())
            },
        )
        .unwrap();
        frames
    };
    let one = decode(Some(1));
    assert!(one.len() >= 24, "{} frames", one.len());
    assert_eq!(one, decode(Some(4)));
    assert_eq!(one, decode(None));
}

/// The luma sampling factors of a JPEG's first component (0x22: 4:2:0,
/// 0x11: 4:4:4), from its start-of-frame segment.
fn luma_sampling(jpeg: &[u8]) -> u8 {
    let sof = jpeg
        .windows(2)
        .position(|w| w == [0xFF, 0xC0])
        .expect("a baseline start-of-frame");
    // marker(2) length(2) precision(1) height(2) width(2) count(1) id(1)
    jpeg[sof + 11]
}

/// Video frames come out in the colours ffmpeg itself decodes them to, with
/// the default (4:2:0) and with 4:4:4; flat black and white stay exact.
#[test]
fn video_frames_keep_their_colours() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = tmp.path().join("videos");
    for (id, name) in [("pattern", "p.mp4"), ("bw", "source.mp4")] {
        fs::create_dir_all(videos.join(id)).unwrap();
        let path = videos.join(id).join(name);
        if id == "bw" {
            let made = media::black_white_video(tmp.path());
            fs::copy(made, &path).unwrap();
        } else {
            media::test_video(&path, "160x120", 25, 2.0);
        }
    }
    let json = tmp.path().join("videos.json");
    fs::write(
        &json,
        r#"[{"id": "pattern", "template": "a"}, {"id": "bw", "template": "b"}]"#,
    )
    .unwrap();
    // ffmpeg's own RGB of the same frames (BT.601, as a JPEG decoder reads
    // YCbCr).
    let reference = media::ffmpeg(&[
        "-i",
        videos.join("pattern/p.mp4").to_str().unwrap(),
        "-r",
        "8",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-",
    ]);
    let frame_len = 160 * 120 * 3;
    assert_eq!(reference.len() % frame_len, 0);
    for (subsampling, sampling) in [
        (SubsamplingChoice::Auto, 0x22),
        (SubsamplingChoice::S444, 0x11),
    ] {
        let out = tmp.path().join(format!("out-{subsampling:?}"));
        let opts = IngestOptions {
            items_per_chunk: 10,
            workers: 2,
            frames: FrameOptions {
                subsampling,
                ..FrameOptions::default()
            },
            fsync: false,
            ..IngestOptions::default()
        };
        let adapter = Dataset::twenty_bn_json(&json, &videos, &out, "template").unwrap();
        let report = ingest(&adapter, &out, &opts, &mut |_| {}).unwrap();
        assert!(report.skipped.is_empty(), "{:?}", report.skipped);
        let gulp = GulpDirectory::open(&out).unwrap();
        let jpegs = gulp.frames("pattern", &Selection::All).unwrap();
        assert_eq!(jpegs.len() * frame_len, reference.len());
        for (i, jpeg) in jpegs.iter().enumerate() {
            assert_eq!(luma_sampling(jpeg), sampling, "{subsampling:?}");
            let got = decode_jpeg(jpeg, ColorMode::Auto).unwrap().pixels;
            let want = &reference[i * frame_len..(i + 1) * frame_len];
            let mean_diff = got
                .iter()
                .zip(want)
                .map(|(&a, &b)| f64::from(a.abs_diff(b)))
                .sum::<f64>()
                / frame_len as f64;
            // JPEG at quality 90 of a sharp test pattern, plus chroma
            // interpolation: a few levels on average, where a wrong range or
            // matrix is tens of levels.
            let bias = got
                .iter()
                .zip(want)
                .map(|(&a, &b)| f64::from(a) - f64::from(b))
                .sum::<f64>()
                / frame_len as f64;
            // JPEG at quality 90 of a sharp test pattern: 1.3 levels on
            // average at 4:4:4 when the reference itself goes through
            // libjpeg-turbo, 5.2 at 4:2:0 (the decoder's smooth chroma
            // upsampling against ffmpeg's blocky one). A wrong range or
            // matrix is tens of levels, and a bias.
            let limit = if sampling == 0x22 { 7.0 } else { 2.5 };
            assert!(
                mean_diff < limit && bias.abs() < 1.5,
                "{subsampling:?} frame {i}: mean diff {mean_diff}, bias {bias}"
            );
        }
        let frames = all_pixels(&gulp, "bw", ":");
        assert_eq!(frames.len(), 80);
        for (i, f) in frames.iter().enumerate() {
            let want = if i % 2 == 0 { 0 } else { 255 };
            assert!(f.iter().all(|&p| p == want), "{subsampling:?} frame {i}");
        }
    }
}

/// [`video::decode_videos`] with one decoding thread per input, as ingest
/// gives on 2 cores, handing frame `f` of video `i` to `sink(i, f)`.
fn decode_batch(
    paths: &[&Path],
    rate: Option<f64>,
    sink: &(dyn Fn(usize, Yuv420) + Sync),
) -> video::BatchOutcome {
    let mut sinks: Vec<_> = (0..paths.len())
        .map(|i| {
            move |frame| {
                sink(i, frame);
                Ok(())
            }
        })
        .collect();
    let mut refs: Vec<&mut video::SendSink<'_>> = sinks
        .iter_mut()
        .map(|s| s as &mut video::SendSink<'_>)
        .collect();
    video::decode_videos(paths, rate, NonZeroU32::new(1), &mut refs)
}

/// Several videos decoded by one ffmpeg give each the frames it gives alone;
/// a batch with a bad video fails as a whole (and does not hang), so that
/// the pipeline decodes its videos one by one.
#[test]
fn batched_decoding_matches_single() {
    let tmp = tempfile::tempdir().unwrap();
    let bw = media::black_white_video(tmp.path());
    let pattern = tmp.path().join("pattern.webm");
    media::test_video(&pattern, "64x48", 25, 3.3);
    let late = tmp.path().join("late.mp4");
    media::late_start_video(&late, "96x64", 15, 4.0);
    let garbage = tmp.path().join("garbage.mp4");
    fs::write(&garbage, b"not a video at all").unwrap();
    let missing = tmp.path().join("missing.mp4");
    // Frames larger than a batch takes (ffmpeg would hold a decoder's
    // frames of this size for every video of the batch).
    let big = tmp.path().join("big.mp4");
    media::ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc2=size=1280x736:rate=5:duration=0.4",
        "-pix_fmt",
        "yuv420p",
        big.to_str().unwrap(),
    ]);

    let single = |path: &Path, rate: Option<f64>| {
        let mut frames = Vec::new();
        video::decode_video(path, rate, None, &mut |f| {
            frames.push(f);
            Ok(())
        })
        .unwrap();
        frames
    };
    let batch = |paths: &[&Path], rate: Option<f64>| {
        let got = Mutex::new(vec![Vec::new(); paths.len()]);
        let outcome = decode_batch(paths, rate, &|i, frame| got.lock().unwrap()[i].push(frame));
        (outcome, got.into_inner().unwrap())
    };
    for rate in [Some(8.0), None] {
        let paths = [bw.as_path(), pattern.as_path(), late.as_path()];
        let (outcome, got) = batch(&paths, rate);
        // Each video's frame rate, from its stream: ffmpeg's -r, or its own.
        let video::BatchOutcome::Decoded(rates) = outcome else {
            panic!("batch at {rate:?}: {outcome:?}");
        };
        match rate {
            Some(r) => assert_eq!(rates, [Some(r); 3]),
            None => assert!(
                rates.iter().all(|r| r.is_some_and(|r| r > 0.0)),
                "{rates:?}"
            ),
        }
        for (path, frames) in paths.iter().zip(&got) {
            assert_eq!(
                frames,
                &single(path, rate),
                "{} at {rate:?}",
                path.display()
            );
        }
    }
    assert!(!single(&big, Some(8.0)).is_empty(), "big decodes alone");
    for (bad, want) in [
        (&garbage, video::BatchOutcome::Failed),
        (&missing, video::BatchOutcome::Failed),
        (&big, video::BatchOutcome::TooLarge),
    ] {
        let (outcome, _) = batch(&[bw.as_path(), bad.as_path(), late.as_path()], Some(8.0));
        assert_eq!(outcome, want, "{}", bad.display());
    }
    // A sink that fails stops the batch too.
    let mut fail = |_| Err(gulp_ingest::ItemError::new("sink says no"));
    let mut fine = |_| Ok(());
    let mut refs: Vec<&mut video::SendSink<'_>> = vec![&mut fine, &mut fail];
    assert_eq!(
        video::decode_videos(&[bw.as_path(), late.as_path()], Some(8.0), None, &mut refs),
        video::BatchOutcome::Failed
    );
}

/// The videos of a batch are decoded one after another, not interleaved
/// frame by frame: once ffmpeg has set up every output (the first frame of
/// each), each video's frames arrive together. Frames of 640×480 (450 KiB)
/// fill ffmpeg's pipes after two, so the order in which the sinks see them
/// is close to the order in which ffmpeg decodes them.
#[test]
fn batched_videos_are_decoded_one_after_another() {
    let tmp = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..3)
        .map(|i| {
            let path = tmp.path().join(format!("{i}.mp4"));
            media::test_video(&path, "640x480", 25, 3.0);
            path
        })
        .collect();
    let order = Mutex::new(Vec::new());
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    assert_eq!(
        decode_batch(&paths, Some(8.0), &|i, _| order.lock().unwrap().push(i)),
        video::BatchOutcome::Decoded(vec![Some(8.0); 3])
    );
    let order = order.into_inner().unwrap();
    // What ffmpeg -r gives for 3 s of video at 8 fps.
    for i in 0..3 {
        assert_eq!(order.iter().filter(|&&v| v == i).count(), 26, "{order:?}");
    }
    // Interleaved, the sinks take turns about every frame (77 changes
    // here); one after another, a few changes while ffmpeg sets up its
    // outputs, and then one per video.
    let changes = order.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(changes <= 10, "{changes} changes between videos: {order:?}");
}

/// Videos too large to batch (frames over 1280×720) and videos that are not
/// are all ingested, with the frames a one-by-one decode gives.
#[test]
fn large_and_small_videos_ingest_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let videos = tmp.path().join("videos");
    // With one worker: a batch of small videos, then a batch that meets a
    // big one (and turns batching off), then single decodes.
    let ids: Vec<String> = (0..video::BATCH)
        .map(|i| format!("small{i}"))
        .chain(["big0", "small_a", "big1", "small_b"].map(String::from))
        .collect();
    for id in &ids {
        fs::create_dir_all(videos.join(id)).unwrap();
        let path = videos.join(id).join("v.mp4");
        if id.starts_with("big") {
            media::test_video(&path, "1296x736", 8, 0.5);
        } else {
            media::test_video(&path, "96x64", 10, 1.0);
        }
    }
    let json = tmp.path().join("videos.json");
    let list: Vec<String> = ids
        .iter()
        .map(|id| format!(r#"{{"id": "{id}", "template": "t"}}"#))
        .collect();
    fs::write(&json, format!("[{}]", list.join(", "))).unwrap();
    let out = tmp.path().join("out");
    let opts = IngestOptions {
        items_per_chunk: 3,
        workers: 1,
        fsync: false,
        ..IngestOptions::default()
    };
    let adapter = Dataset::twenty_bn_json(&json, &videos, &out, "template").unwrap();
    let report = ingest(&adapter, &out, &opts, &mut |_| {}).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.items, ids.len());
    let gulp = GulpDirectory::open(&out).unwrap();
    for id in &ids {
        let path = videos.join(id).join("v.mp4");
        let mut want = Vec::new();
        gulp_ingest::frames::encode_frames(
            &gulp_ingest::FrameSource::Video(path),
            &FrameOptions {
                frame_rate: Some(8.0),
                ..FrameOptions::default()
            },
            &mut |jpeg| {
                want.push(jpeg);
                Ok(())
            },
        )
        .unwrap();
        let got: Vec<Vec<u8>> = gulp
            .frames(id, &Selection::All)
            .unwrap()
            .into_iter()
            .map(std::borrow::Cow::into_owned)
            .collect();
        assert_eq!(got, want, "{id}");
    }
}
