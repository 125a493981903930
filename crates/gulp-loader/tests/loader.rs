//! The loader on real frames: JPEGs that ffmpeg encodes from its test
//! sources, written into a gulp directory on disk.

use std::path::{Path, PathBuf};
use std::process::Command;

use gulp_format::{Map, Value};
use gulp_io::{ChunkWriter, ColorMode, decode_jpeg};
use gulp_loader::{
    CropMode, Loader, LoaderOptions, OnError, Order, Sampling, Spatial, clip_indices,
};

/// `n` JPEG frames of an ffmpeg test source at `w`×`h`.
fn ffmpeg_frames(source: &str, w: usize, h: usize, n: usize) -> Vec<Vec<u8>> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-f", "lavfi", "-i"])
        .arg(format!("{source}=size={w}x{h}:rate=10"))
        .args(["-frames:v", &n.to_string(), "-q:v", "3"])
        .arg(tmp.path().join("%04d.jpg"))
        .status()
        .expect("ffmpeg runs (scripts/deps.sh installs it)");
    assert!(status.success());
    (1..=n)
        .map(|i| std::fs::read(tmp.path().join(format!("{i:04}.jpg"))).expect("frame"))
        .collect()
}

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    /// (id, label, frames) in directory order.
    items: Vec<(String, String, Vec<Vec<u8>>)>,
}

/// Two chunks, 10 items of 3 to 21 frames of 160x120 (two sources, two
/// labels), and a label2idx.json numbering the labels in reverse order.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("gulp");
    std::fs::create_dir(&dir).expect("mkdir");
    let sources = [("testsrc2", "bars"), ("mandelbrot", "fractal")];
    let all: Vec<Vec<Vec<u8>>> = sources
        .iter()
        .map(|(s, _)| ffmpeg_frames(s, 160, 120, 21))
        .collect();
    let mut items = Vec::new();
    for k in 0..10 {
        let (src, label) = (k % 2, sources[k % 2].1);
        let n = 3 + 2 * k;
        let frames: Vec<Vec<u8>> = all[src][..n].to_vec();
        items.push((format!("item-{k}"), label.to_owned(), frames));
    }
    for (chunk, part) in items.chunks(5).enumerate() {
        let mut writer = ChunkWriter::builder()
            .create(&dir, chunk as u64)
            .expect("writer");
        for (id, label, frames) in part {
            let mut meta = Map::default();
            meta.insert("label".into(), Value::from(label.as_str()));
            writer
                .append(id, Value::Object(meta), frames.iter())
                .expect("append");
        }
        writer.finish().expect("finish");
    }
    std::fs::write(dir.join("label2idx.json"), r#"{"fractal": 0, "bars": 1}"#).expect("labels");
    Fixture {
        _tmp: tmp,
        dir,
        items,
    }
}

fn eval_options() -> LoaderOptions {
    LoaderOptions {
        frames: 4,
        sampling: Sampling::Segments,
        spatial: Spatial {
            resize: None,
            size: Some((96, 128)),
            crop: CropMode::Center,
            flip: false,
        },
        batch_size: 3,
        order: Order {
            shuffle: false,
            ..Order::default()
        },
        train: false,
        threads: 2,
        ..LoaderOptions::default()
    }
}

fn train_options(threads: usize) -> LoaderOptions {
    LoaderOptions {
        frames: 5,
        sampling: Sampling::Window,
        step: 2,
        spatial: Spatial {
            resize: Some(72),
            size: Some((64, 64)),
            crop: CropMode::Random,
            flip: true,
        },
        batch_size: 4,
        order: Order {
            shuffle: true,
            seed: 42,
            ..Order::default()
        },
        train: true,
        threads,
        ..LoaderOptions::default()
    }
}

fn collect(loader: &mut Loader) -> Vec<gulp_loader::Batch> {
    loader
        .iter()
        .collect::<Result<Vec<_>, _>>()
        .expect("batches")
}

#[test]
fn centre_crops_equal_the_decoded_frames_cropped() {
    let fx = fixture();
    let mut loader = Loader::open(&fx.dir, eval_options()).expect("open");
    assert_eq!(loader.len(), 4); // 10 clips in batches of 3, the last short
    let batches = collect(&mut loader);
    assert_eq!(batches.len(), 4);
    assert_eq!(batches[3].shape, [1, 4, 96, 128, 3]);
    let mut seen = 0;
    for batch in &batches {
        let [b, t, h, w, c] = batch.shape;
        assert_eq!(batch.frames.len(), b * t * h * w * c);
        for (k, id) in batch.ids.iter().enumerate() {
            let (_, label, frames) = &fx.items[seen];
            assert_eq!(id, &fx.items[seen].0);
            assert_eq!(batch.labels[k], if label == "bars" { 1 } else { 0 });
            let expected = clip_indices(
                Sampling::Segments,
                4,
                1,
                frames.len(),
                gulp_loader::Placement::Fixed { index: 0, count: 1 },
            );
            assert_eq!(&batch.indices[k * t..(k + 1) * t], &expected[..]);
            for (j, &fi) in expected.iter().enumerate() {
                let full = decode_jpeg(&frames[fi], ColorMode::Rgb).expect("decode");
                let (x0, y0) = ((160 - 128) / 2, (120 - 96) / 2);
                let clip = &batch.frames[((k * t + j) * h * w * 3)..((k * t + j + 1) * h * w * 3)];
                for row in 0..h {
                    let src = ((y0 + row) * 160 + x0) * 3;
                    assert_eq!(
                        &clip[row * w * 3..(row + 1) * w * 3],
                        &full.pixels[src..src + w * 3],
                        "{id} frame {fi} row {row}"
                    );
                }
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 10);
}

#[test]
fn resized_crops_match_a_full_decode_resized() {
    let fx = fixture();
    // Short edge 60 of 160x120 is a DCT scale of exactly 1/2: the crop is
    // decoded straight at that scale. Short edge 45 is not: the crop is
    // resampled from 3/8.
    for edge in [60usize, 45] {
        let options = LoaderOptions {
            spatial: Spatial {
                resize: Some(edge),
                size: Some((40, 40)),
                crop: CropMode::Center,
                flip: false,
            },
            ..eval_options()
        };
        let mut loader = Loader::open(&fx.dir, options).expect("open");
        let batch = loader.iter().next().expect("a batch").expect("decoded");
        let (_, _, frames) = &fx.items[0];
        let fi = batch.indices[0];
        let full = decode_jpeg(&frames[fi], ColorMode::Rgb).expect("decode");
        // The reference: a full decode, resized (bilinear, area-averaging)
        // to the short edge, centre crop.
        let (rw, rh) = gulp_loader::resized_size(160, 120, edge);
        let resized = box_resize(&full.pixels, 160, 120, rw, rh);
        let (x0, y0) = ((rw - 40) / 2, (rh - 40) / 2);
        let mut diff = 0u64;
        for row in 0..40 {
            for col in 0..40 {
                for c in 0..3 {
                    let a = batch.frames[(row * 40 + col) * 3 + c];
                    let b = resized[((y0 + row) * rw + x0 + col) * 3 + c];
                    diff += u64::from(a.abs_diff(b));
                }
            }
        }
        let mean = diff as f64 / (40.0 * 40.0 * 3.0);
        eprintln!("short edge {edge}: mean abs difference {mean}");
        assert!(mean < 6.0, "short edge {edge}: mean abs difference {mean}");
    }
}

/// A plain area-weighted resize, the reference the loader's path is
/// compared with.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn box_resize(src: &[u8], w: usize, h: usize, ow: usize, oh: usize) -> Vec<u8> {
    let mut out = vec![0u8; ow * oh * 3];
    let (sx, sy) = (w as f64 / ow as f64, h as f64 / oh as f64);
    for y in 0..oh {
        for x in 0..ow {
            let (x0, x1) = (x as f64 * sx, (x + 1) as f64 * sx);
            let (y0, y1) = (y as f64 * sy, (y + 1) as f64 * sy);
            let mut acc = [0f64; 3];
            let mut weight = 0f64;
            for yy in (y0.floor() as usize)..(y1.ceil() as usize).min(h) {
                let wy = (y1.min((yy + 1) as f64) - y0.max(yy as f64)).max(0.0);
                for xx in (x0.floor() as usize)..(x1.ceil() as usize).min(w) {
                    let wx = (x1.min((xx + 1) as f64) - x0.max(xx as f64)).max(0.0);
                    for c in 0..3 {
                        acc[c] += wx * wy * f64::from(src[(yy * w + xx) * 3 + c]);
                    }
                    weight += wx * wy;
                }
            }
            for c in 0..3 {
                out[(y * ow + x) * 3 + c] = (acc[c] / weight).round() as u8;
            }
        }
    }
    out
}

#[test]
fn one_seed_gives_the_same_batches_on_any_thread_count() {
    let fx = fixture();
    let one = collect(&mut Loader::open(&fx.dir, train_options(1)).expect("open"));
    let two = collect(&mut Loader::open(&fx.dir, train_options(2)).expect("open"));
    assert_eq!(one.len(), 3);
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.indices, b.indices);
        assert!(a.frames == b.frames, "batch {} differs", a.index);
    }
    // Another epoch shuffles and draws differently; the same epoch again
    // gives the same batches.
    let mut loader = Loader::open(&fx.dir, train_options(2)).expect("open");
    let e0 = collect(&mut loader);
    assert_eq!(
        loader.epoch(),
        1,
        "a completed pass moves to the next epoch"
    );
    let e1 = collect(&mut loader);
    assert_ne!(
        e0.iter().map(|b| b.ids.clone()).collect::<Vec<_>>(),
        e1.iter().map(|b| b.ids.clone()).collect::<Vec<_>>()
    );
    loader.set_epoch(0);
    let again = collect(&mut loader);
    assert!(e0.iter().zip(&again).all(|(a, b)| a.frames == b.frames));
    // Flips happen: some clip differs from its mirror-free twin.
    let no_flip = LoaderOptions {
        spatial: Spatial {
            flip: false,
            ..train_options(2).spatial
        },
        ..train_options(2)
    };
    let plain = collect(&mut Loader::open(&fx.dir, no_flip).expect("open"));
    assert!(one.iter().zip(&plain).any(|(a, b)| a.frames != b.frames));
}

#[test]
fn resume_after_k_batches_yields_exactly_the_rest() {
    let fx = fixture();
    let options = LoaderOptions {
        batch_size: 2,
        ..train_options(2)
    };
    let mut full = Loader::open(&fx.dir, options.clone()).expect("open");
    full.set_epoch(3);
    let all = collect(&mut full);
    assert_eq!(all.len(), 5);
    for k in 0..all.len() {
        let mut first = Loader::open(&fx.dir, options.clone()).expect("open");
        first.set_epoch(3);
        let taken: Vec<_> = first.iter().take(k).collect();
        assert_eq!(taken.len(), k);
        let state = first.state();
        assert_eq!((state.epoch, state.batch), (3, k));
        let mut resumed = Loader::open(&fx.dir, options.clone()).expect("open");
        resumed.load_state(&state).expect("same loader");
        resumed.set_epoch(3); // a training loop's set_epoch keeps the place
        let rest = collect(&mut resumed);
        assert_eq!(rest.len(), all.len() - k);
        for (a, b) in rest.iter().zip(&all[k..]) {
            assert_eq!((a.index, &a.ids), (b.index, &b.ids));
            assert!(a.frames == b.frames);
        }
    }
    let other = LoaderOptions {
        order: Order {
            seed: 7,
            ..options.order
        },
        ..options.clone()
    };
    let mut wrong = Loader::open(&fx.dir, other).expect("open");
    let err = wrong.load_state(&full.state()).expect_err("another seed");
    assert!(err.to_string().contains("seed is 42"), "{err}");
    let other = LoaderOptions {
        frames: 3,
        ..options
    };
    let mut wrong = Loader::open(&fx.dir, other).expect("open");
    let err = wrong.load_state(&full.state()).expect_err("other options");
    assert!(err.to_string().contains("options"), "{err}");
}

/// Every clip a loader yields, by global position: (id, frame indices,
/// pixels).
type Served = std::collections::BTreeMap<usize, Vec<(String, Vec<usize>, Vec<u8>)>>;

fn serve(batches: &[gulp_loader::Batch], served: &mut Served) {
    for b in batches {
        let [n, t, h, w, c] = b.shape;
        let clip = t * h * w * c;
        for k in 0..n {
            served.entry(b.positions[k]).or_default().push((
                b.ids[k].clone(),
                b.indices[k * t..(k + 1) * t].to_vec(),
                b.frames[k * clip..(k + 1) * clip].to_vec(),
            ));
        }
    }
}

#[test]
fn a_state_saved_on_4_ranks_resumes_on_2_3_and_4() {
    let fx = fixture();
    let options = |rank: usize, world_size: usize, drop_last: bool| LoaderOptions {
        batch_size: 1,
        order: Order {
            rank,
            world_size,
            drop_last,
            ..train_options(1).order
        },
        ..train_options(1)
    };
    for drop_last in [false, true] {
        // The reference: the whole epoch on one rank, position by position.
        let mut reference = Served::new();
        let mut one = Loader::open(&fx.dir, options(0, 1, drop_last)).expect("open");
        serve(&collect(&mut one), &mut reference);
        assert_eq!(reference.len(), 10);
        for resume_on in [2usize, 3, 4] {
            // 4 ranks yield one batch each (a synchronous step), then save.
            let mut served = Served::new();
            let mut states = Vec::new();
            for rank in 0..4 {
                let mut loader = Loader::open(&fx.dir, options(rank, 4, drop_last)).expect("open");
                let first: Vec<_> = loader
                    .iter()
                    .take(1)
                    .collect::<Result<_, _>>()
                    .expect("batch");
                serve(&first, &mut served);
                states.push(loader.state());
            }
            assert!(states.iter().all(|s| s.position == Some(4)), "{states:?}");
            // The job restarts on another number of ranks, each from the
            // state of some old rank (here rank 0's, and rank 3's).
            for rank in 0..resume_on {
                let mut loader =
                    Loader::open(&fx.dir, options(rank, resume_on, drop_last)).expect("open");
                loader
                    .load_state(&states[(rank * 3) % 4])
                    .expect("elastic resume");
                serve(&collect(&mut loader), &mut served);
                assert_eq!(loader.epoch(), 1, "the resumed epoch ends");
            }
            // Every position of the order served once, with the clip the
            // one-rank epoch has there; only padding repeats (positions past
            // the end) may be added.
            for (position, clips) in &served {
                if *position < 10 {
                    assert_eq!(
                        clips.len(),
                        1,
                        "position {position} served {} times",
                        clips.len()
                    );
                    assert!(
                        clips[0] == reference[position][0],
                        "position {position}: another clip than on one rank"
                    );
                } else {
                    assert!(!drop_last, "padding with drop_last");
                }
            }
            // drop_last cuts what remains to a multiple of the new world
            // size (6 positions remain after 4).
            let covered = served.keys().filter(|p| **p < 10).count();
            let expected = if drop_last {
                4 + 6 / resume_on * resume_on
            } else {
                10
            };
            assert_eq!(
                covered, expected,
                "resumed on {resume_on}, drop_last {drop_last}"
            );
            assert!(served.keys().filter(|p| **p < 10).all(|p| *p < expected));
        }
    }
}

#[test]
fn a_state_inside_an_items_clips_resumes_on_its_own_rank_only() {
    let fx = fixture();
    let options = |world_size: usize| LoaderOptions {
        clips: 2,
        batch_size: 3,
        order: Order {
            world_size,
            ..eval_options().order
        },
        ..eval_options()
    };
    let mut loader = Loader::open(&fx.dir, options(2)).expect("open");
    let _ = loader.iter().next().expect("a batch").expect("decoded");
    let state = loader.state();
    assert_eq!(state.position, None); // 3 clips: one item and a half
    let mut other = Loader::open(&fx.dir, options(3)).expect("open");
    let err = other.load_state(&state).expect_err("mid-item");
    assert!(err.to_string().contains("rank 0/2 only"), "{err}");
    let mut same = Loader::open(&fx.dir, options(2)).expect("open");
    same.load_state(&state).expect("the same rank and world");
}

#[test]
fn ranks_cover_the_epoch_like_distributed_sampler() {
    let fx = fixture();
    for drop_last in [false, true] {
        let mut ids = Vec::new();
        let mut lens = Vec::new();
        for rank in 0..3 {
            let options = LoaderOptions {
                batch_size: 1,
                order: Order {
                    rank,
                    world_size: 3,
                    drop_last,
                    ..train_options(1).order
                },
                ..train_options(1)
            };
            let mut loader = Loader::open(&fx.dir, options).expect("open");
            let batches = collect(&mut loader);
            lens.push(batches.len());
            ids.extend(batches.into_iter().flat_map(|b| b.ids));
        }
        if drop_last {
            // 10 items over 3 ranks: 3 each, one item left out, no repeats.
            assert_eq!(lens, [3, 3, 3]);
            let mut unique = ids.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), 9);
        } else {
            // Padded to 12 by repeating the first two of the order.
            assert_eq!(lens, [4, 4, 4]);
            let mut unique = ids.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), 10);
        }
    }
}

#[test]
fn evaluation_views_are_clips_times_crops() {
    let fx = fixture();
    let options = LoaderOptions {
        clips: 2,
        spatial: Spatial {
            resize: None,
            size: Some((100, 100)),
            crop: CropMode::Three,
            flip: false,
        },
        batch_size: 6,
        ..eval_options()
    };
    let mut loader = Loader::open(&fx.dir, options).expect("open");
    assert_eq!(loader.samples(), 60);
    let batch = loader.iter().next().expect("batch").expect("decoded");
    assert_eq!(batch.ids, vec!["item-0".to_owned(); 6]);
    assert_eq!(batch.views, [0, 1, 2, 3, 4, 5]);
    // The three crops of one clip differ (left, centre, right of 160x120).
    let per = 4 * 100 * 100 * 3;
    assert!(batch.frames[..per] != batch.frames[per..2 * per]);
    assert!(batch.frames[per..2 * per] != batch.frames[2 * per..3 * per]);
    // Clips 0 and 1 of item-0 (3 frames) take different frames or the same
    // frames: their indices are the documented ones.
    let t = 4;
    assert_eq!(&batch.indices[..t], &[0, 0, 1, 2][..]);
    assert_eq!(&batch.indices[3 * t..4 * t], &[0, 1, 2, 2][..]);
}

fn corrupt_one_frame(dir: &Path) -> (String, usize, u64) {
    // Overwrite the scan data of item-2's frame 1 with garbage.
    let dir_handle = gulp_io::GulpDirectory::open(dir).expect("open");
    let item = dir_handle.item("item-2").expect("item");
    let fi = item.frame_info[1];
    let path = dir.join("data_0.gulp");
    let mut data = std::fs::read(&path).expect("read");
    let start = usize::try_from(fi.loc).expect("small") + 400;
    for b in &mut data[start..start + 600] {
        *b = 0xff;
    }
    std::fs::write(&path, data).expect("write");
    ("item-2".into(), 1, fi.loc)
}

#[test]
fn a_bad_frame_raises_with_its_place_or_skips_the_clip() {
    let fx = fixture();
    let (id, frame, loc) = corrupt_one_frame(&fx.dir);
    let options = LoaderOptions {
        frames: 7,
        sampling: Sampling::Uniform,
        batch_size: 5,
        ..eval_options()
    };
    let mut loader = Loader::open(&fx.dir, options.clone()).expect("open");
    let err = loader
        .iter()
        .find_map(Result::err)
        .expect("the damaged frame is an error");
    let msg = err.to_string();
    assert!(msg.contains(&format!("{id:?}")), "{msg}");
    assert!(msg.contains(&format!("frame {frame}")), "{msg}");
    assert!(msg.contains(&format!("byte {loc}")), "{msg}");
    assert!(msg.contains("data_0.gulp"), "{msg}");

    let skip = LoaderOptions {
        on_error: OnError::Skip,
        ..options
    };
    let batches = collect(&mut Loader::open(&fx.dir, skip).expect("open"));
    assert_eq!(batches[0].shape[0], 4);
    assert_eq!(batches[0].skipped.len(), 1);
    assert_eq!(batches[0].skipped[0].id, id);
    assert!(!batches[0].ids.contains(&id));
    assert_eq!(batches[1].shape[0], 5);
}

#[test]
fn bad_options_and_labels_are_clear_errors() {
    let fx = fixture();
    let no_size = LoaderOptions {
        spatial: Spatial {
            resize: Some(64),
            size: None,
            crop: CropMode::Random,
            flip: false,
        },
        ..eval_options()
    };
    let err = Loader::open(&fx.dir, no_size).expect_err("a crop without a size");
    assert!(err.to_string().contains("needs a size"), "{err}");
    let err = Loader::open(
        &fx.dir,
        LoaderOptions {
            order: Order {
                rank: 2,
                world_size: 2,
                ..Order::default()
            },
            ..eval_options()
        },
    )
    .expect_err("rank out of range");
    assert!(err.to_string().contains("rank 2"), "{err}");
    // A crop larger than the frame names the item.
    let big = LoaderOptions {
        spatial: Spatial {
            resize: None,
            size: Some((200, 200)),
            crop: CropMode::Center,
            flip: false,
        },
        ..eval_options()
    };
    let err = collect_err(&fx.dir, big);
    assert!(err.contains("item-0") && err.contains("160x120"), "{err}");
    // A label missing from label2idx.json.
    std::fs::write(fx.dir.join("label2idx.json"), r#"{"bars": 1}"#).expect("labels");
    let err = Loader::open(&fx.dir, eval_options()).expect_err("unknown label");
    let msg = err.to_string();
    assert!(msg.contains("fractal") && msg.contains("item-1"), "{msg}");
}

fn collect_err(dir: &Path, options: LoaderOptions) -> String {
    let mut loader = Loader::open(dir, options).expect("open");
    loader
        .iter()
        .find_map(Result::err)
        .expect("an error")
        .to_string()
}

#[test]
fn stored_size_batches_need_equal_frames() {
    let fx = fixture();
    let whole = LoaderOptions {
        spatial: Spatial {
            resize: None,
            size: None,
            crop: CropMode::None,
            flip: false,
        },
        ..eval_options()
    };
    let mut loader = Loader::open(&fx.dir, whole).expect("open");
    let batch = loader.iter().next().expect("batch").expect("decoded");
    assert_eq!(batch.shape, [3, 4, 120, 160, 3]);
}
