//! The loader on real frames: JPEGs that ffmpeg encodes from its test
//! sources, written into gulp directories on disk.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use gulp_codec::{ColorMode, decode_jpeg};
use gulp_format::{JsonSerializer, Value};
use gulp_loader::{
    Amount, Compare, CropMode, ItemWeights, Loader, LoaderOptions, OnError, OnMissing, Order,
    Predicate, Sampler, Sampling, Segments, Shuffle, Source, Spatial, Target, TargetValues,
    Targets, WeightColumn, clip_indices,
};
use gulp_test_support::gulp_dir::GulpDirBuilder;

/// `n` JPEG frames of an ffmpeg test source at `w`×`h`.
fn ffmpeg_frames(source: &str, w: usize, h: usize, n: usize) -> Vec<Vec<u8>> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let status = Command::new("ffmpeg")
        .args(["-v", "error", "-f", "lavfi", "-i"])
        .arg(format!("{source}=size={w}x{h}:rate=10"))
        .args(["-frames:v", &n.to_string(), "-q:v", "3"])
        .arg(tmp.path().join("%04d.jpg"))
        .status()
        .expect("ffmpeg runs (scripts/env/deps.sh installs it)");
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
    /// A second directory: 6 items of 4 to 14 frames, labels "rings" and
    /// "bars", numbered by its own label2idx.json.
    other: PathBuf,
    /// The meta of every item of both directories, by id.
    metas: HashMap<String, Value>,
}

/// The meta of item `k` (`n` frames, `label`): besides the label, keys for
/// every target form and two lists of segments (in frames, and in seconds
/// at 10 fps with a `duration`); item 4 has no `score`.
fn meta_of(k: usize, n: usize, label: &str) -> Value {
    let half = n / 2;
    let score = if k == 4 {
        String::new()
    } else {
        format!(r#""score": {}, "#, k as f64 * 0.25)
    };
    let text = format!(
        r#"{{"label": "{label}", "group": {group}, "verb_class": {verb}, "noun_class": {noun},
            "tags": [{t0}, {t1}], {score}"duration": {duration},
            "segments": [{{"start": 0, "end": {half}, "verb_class": 7}},
                         {{"start": {half}, "end": {n}, "label": "bars"}}],
            "annotations": [{{"segment": [0.0, {h_s}], "label": "fractal"}},
                            {{"segment": [{h_s}, {n_s}]}}]}}"#,
        group = usize::from(k >= 7),
        verb = k % 3,
        noun = 10 + k % 4,
        t0 = k % 3,
        t1 = (k + 2) % 4,
        duration = n as f64 / 10.0,
        h_s = half as f64 / 10.0,
        n_s = n as f64 / 10.0,
    );
    JsonSerializer::parse_value(text.as_bytes()).expect("meta")
}

/// Writes `items` into `dir`, `per_chunk` a chunk, with [`meta_of`].
fn write_dir(
    dir: &Path,
    items: &[(String, String, Vec<Vec<u8>>)],
    first: usize,
    per_chunk: usize,
    metas: &mut HashMap<String, Value>,
) {
    let ids: Vec<&str> = items.iter().map(|(id, _, _)| id.as_str()).collect();
    GulpDirBuilder::new(dir)
        .items(&ids, per_chunk, |k, id| {
            let (_, label, frames) = &items[k];
            let meta = meta_of(first + k, frames.len(), label);
            metas.insert(id.to_owned(), meta.clone());
            (meta, frames.clone())
        })
        .write();
}

/// Two chunks, 10 items of 3 to 21 frames of 160x120 (two sources, two
/// labels), and a label2idx.json numbering the labels in reverse order;
/// and the second directory.
fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("gulp");
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
    let mut metas = HashMap::new();
    write_dir(&dir, &items, 0, 5, &mut metas);
    std::fs::write(dir.join("label2idx.json"), r#"{"fractal": 0, "bars": 1}"#).expect("labels");
    let other = tmp.path().join("other");
    let others: Vec<_> = (0..6)
        .map(|k| {
            let label = if k % 3 == 0 { "rings" } else { "bars" };
            let frames = all[(k + 1) % 2][..4 + 2 * k].to_vec();
            (format!("other-{k}"), label.to_owned(), frames)
        })
        .collect();
    write_dir(&other, &others, 10, 4, &mut metas);
    std::fs::write(other.join("label2idx.json"), r#"{"bars": 0, "rings": 1}"#).expect("labels");
    Fixture {
        _tmp: tmp,
        dir,
        items,
        other,
        metas,
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
            shuffle: Shuffle::Off,
            drop_last: false,
            ..Order::default()
        },
        train: Some(false),
        threads: Some(2),
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
            shuffle: Shuffle::Items,
            seed: 42,
            drop_last: false,
            ..Order::default()
        },
        train: Some(true),
        threads: Some(threads),
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
        let (rw, rh) = gulp_loader::short_edge_rounded(160, 120, edge);
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

/// The data a loader reads, and the options that go with it.
struct Setup {
    name: &'static str,
    sources: Vec<Source>,
    options: fn(LoaderOptions) -> LoaderOptions,
}

impl Setup {
    fn open(&self, options: LoaderOptions) -> Loader {
        Loader::from_sources(&self.sources, (self.options)(options)).expect(self.name)
    }
}

/// The determinism, resume and rank tests run on each: one directory as
/// it is; a mixture by weight with a `where` subset, balanced classes and
/// an epoch of a fixed size; a mixture of segments (repeat, choose) with an
/// id subset, per-item weights and two keys as the target.
fn setups(fx: &Fixture) -> Vec<Setup> {
    vec![
        Setup {
            name: "one directory",
            sources: vec![Source::new(&fx.dir)],
            options: |o| o,
        },
        Setup {
            name: "mixture, where, balanced",
            sources: vec![
                Source::new(&fx.dir)
                    .amount(Amount::Weight(0.6))
                    .filter(|id, _| Ok(id != "item-3")),
                Source::new(&fx.other).amount(Amount::Weight(0.4)),
            ],
            options: |o| LoaderOptions {
                sampler: Sampler::Balanced,
                target: Target::Key("group".into()),
                samples_per_epoch: Some(13),
                ..o
            },
        },
        Setup {
            name: "segments, ids, weights",
            sources: vec![
                Source {
                    ids: Some(
                        ["item-1", "item-2", "item-5", "item-8"]
                            .map(String::from)
                            .into(),
                    ),
                    ..Source::new(&fx.dir).amount(Amount::Repeat(1.5))
                },
                Source {
                    weights: Some(ItemWeights::Fn(Arc::new(|id, _| {
                        Ok(if id == "other-0" { 0.0 } else { 1.0 })
                    }))),
                    ..Source::new(&fx.other).amount(Amount::Choose(5))
                },
            ],
            options: |o| LoaderOptions {
                segments: Some(Segments::new("segments")),
                target: Target::Keys(vec!["verb_class".into(), "noun_class".into()]),
                ..o
            },
        },
    ]
}

#[test]
fn one_seed_gives_the_same_batches_on_any_thread_count() {
    let fx = fixture();
    for setup in setups(&fx) {
        let one = collect(&mut setup.open(train_options(1)));
        let two = collect(&mut setup.open(train_options(2)));
        assert!(!one.is_empty(), "{}", setup.name);
        for (a, b) in one.iter().zip(&two) {
            assert_eq!(a.ids, b.ids);
            assert_eq!((&a.indices, &a.targets), (&b.indices, &b.targets));
            assert!(
                a.frames == b.frames,
                "{}: batch {} differs",
                setup.name,
                a.index
            );
        }
        // Another epoch shuffles and draws differently; the same epoch again
        // gives the same batches.
        let mut loader = setup.open(train_options(2));
        let e0 = collect(&mut loader);
        assert_eq!(
            loader.epoch(),
            1,
            "a completed pass moves to the next epoch"
        );
        let e1 = collect(&mut loader);
        assert_ne!(
            e0.iter().map(|b| b.ids.clone()).collect::<Vec<_>>(),
            e1.iter().map(|b| b.ids.clone()).collect::<Vec<_>>(),
            "{}",
            setup.name
        );
        loader.set_epoch(0);
        let again = collect(&mut loader);
        assert!(e0.iter().zip(&again).all(|(a, b)| a.frames == b.frames));
        if setup.name != "one directory" {
            continue;
        }
        assert_eq!(one.len(), 3);
        // Flips happen: some clip differs from its mirror-free twin.
        let no_flip = LoaderOptions {
            spatial: Spatial {
                flip: false,
                ..train_options(2).spatial
            },
            ..train_options(2)
        };
        let plain = collect(&mut setup.open(no_flip));
        assert!(one.iter().zip(&plain).any(|(a, b)| a.frames != b.frames));
    }
}

#[test]
fn resume_after_k_batches_yields_exactly_the_rest() {
    let fx = fixture();
    let options = LoaderOptions {
        batch_size: 2,
        ..train_options(2)
    };
    for setup in setups(&fx) {
        let mut full = setup.open(options.clone());
        full.set_epoch(3);
        let all = collect(&mut full);
        assert_eq!(
            all.len(),
            full.epoch_samples().div_ceil(2),
            "{}",
            setup.name
        );
        for k in 0..all.len() {
            let mut first = setup.open(options.clone());
            first.set_epoch(3);
            let taken: Vec<_> = first.iter().take(k).collect();
            assert_eq!(taken.len(), k);
            let state = first.state();
            assert_eq!((state.epoch, state.batch), (3, k));
            let mut resumed = setup.open(options.clone());
            resumed.load_state(&state).expect("same loader");
            resumed.set_epoch(3); // a training loop's set_epoch keeps the place
            let rest = collect(&mut resumed);
            assert_eq!(rest.len(), all.len() - k);
            for (a, b) in rest.iter().zip(&all[k..]) {
                assert_eq!((a.index, &a.ids, &a.targets), (b.index, &b.ids, &b.targets));
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
        let err = setup
            .open(other)
            .load_state(&full.state())
            .expect_err("another seed");
        assert!(err.to_string().contains("seed is 42"), "{err}");
        let other = LoaderOptions {
            frames: 3,
            ..options.clone()
        };
        let err = setup
            .open(other)
            .load_state(&full.state())
            .expect_err("other options");
        assert!(err.to_string().contains("options"), "{err}");
    }
    // A state is refused by a loader of other sources, ids, weights or
    // targets, naming which.
    let base = setups(&fx).remove(2);
    let state = base.open(options.clone()).state();
    let refused = |sources: Vec<Source>, tweak: fn(LoaderOptions) -> LoaderOptions| {
        Loader::from_sources(&sources, tweak((base.options)(options.clone())))
            .expect("open")
            .load_state(&state)
            .expect_err("a state of another loader is refused")
            .to_string()
    };
    let mut ids = base.sources.clone();
    ids[0].ids = Some(vec!["item-1".into(), "item-2".into(), "item-5".into()]);
    let mut choose = base.sources.clone();
    choose[1].amount = Amount::Choose(6);
    let mut weights = base.sources.clone();
    weights[1].weights = Some(ItemWeights::Fn(Arc::new(|_, _| Ok(1.0))));
    for (what, sources, tweak) in [
        ("subset", ids, (|o| o) as fn(LoaderOptions) -> LoaderOptions),
        ("sources", choose, |o| o),
        ("weights", weights, |o| o),
        ("targets", base.sources.clone(), |o| LoaderOptions {
            target: Target::Keys(vec!["noun_class".into(), "verb_class".into()]),
            ..o
        }),
    ] {
        let err = refused(sources, tweak);
        assert!(err.contains(&format!("state's {what} is")), "{what}: {err}");
    }
}

/// Every clip a loader yields, by global position: (id, frame indices,
/// pixels).
type Served = BTreeMap<usize, Vec<(String, Vec<usize>, Vec<u8>)>>;

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

/// Training options of one clip per batch, on `rank` of `world_size`.
fn one_per_batch(rank: usize, world_size: usize, drop_last: bool) -> LoaderOptions {
    LoaderOptions {
        batch_size: 1,
        order: Order {
            rank,
            world_size,
            drop_last,
            ..train_options(1).order
        },
        ..train_options(1)
    }
}

#[test]
fn a_state_saved_on_4_ranks_resumes_on_2_3_and_4() {
    let fx = fixture();
    for setup in setups(&fx) {
        for drop_last in [false, true] {
            // The reference: the whole epoch on one rank, position by position.
            let mut reference = Served::new();
            let mut one = setup.open(one_per_batch(0, 1, drop_last));
            serve(&collect(&mut one), &mut reference);
            let n = one.epoch_samples();
            assert_eq!(reference.len(), n, "{}", setup.name);
            for resume_on in [2usize, 3, 4] {
                // 4 ranks yield one batch each (a synchronous step), then save.
                let mut served = Served::new();
                let mut states = Vec::new();
                for rank in 0..4 {
                    let mut loader = setup.open(one_per_batch(rank, 4, drop_last));
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
                    let mut loader = setup.open(one_per_batch(rank, resume_on, drop_last));
                    loader
                        .load_state(&states[(rank * 3) % 4])
                        .expect("elastic resume");
                    serve(&collect(&mut loader), &mut served);
                    assert_eq!(loader.epoch(), 1, "the resumed epoch ends");
                }
                // Every position of the order served once, with the clip the
                // one-rank epoch has there; only padding repeats (positions
                // past the end) may be added.
                for (position, clips) in &served {
                    if *position < n {
                        assert_eq!(
                            clips.len(),
                            1,
                            "{}: position {position} served {} times",
                            setup.name,
                            clips.len()
                        );
                        assert!(
                            clips[0] == reference[position][0],
                            "{}: position {position}: another clip than on one rank",
                            setup.name
                        );
                    } else {
                        assert!(!drop_last, "padding with drop_last");
                    }
                }
                // drop_last cuts what remains to a multiple of the new world
                // size (n - 4 positions remain after 4).
                let covered = served.keys().filter(|p| **p < n).count();
                let expected = if drop_last {
                    4 + (n - 4) / resume_on * resume_on
                } else {
                    n
                };
                assert_eq!(
                    covered, expected,
                    "{}: resumed on {resume_on}, drop_last {drop_last}",
                    setup.name
                );
                assert!(served.keys().filter(|p| **p < n).all(|p| *p < expected));
            }
        }
    }
}

#[test]
fn a_state_inside_an_items_clips_resumes_on_its_own_world_size_only() {
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
    assert!(err.to_string().contains("a world size of 2 only"), "{err}");
    let mut same = Loader::open(&fx.dir, options(2)).expect("open");
    same.load_state(&state).expect("the same rank and world");
    // Another rank of the same world resumes from it too (Lightning hands
    // rank 0's state to every rank): at the same batch of its own share.
    let rank1 = |o: LoaderOptions| LoaderOptions {
        order: Order { rank: 1, ..o.order },
        ..o
    };
    let mut whole = Loader::open(&fx.dir, rank1(options(2))).expect("open");
    let expected: Vec<_> = collect(&mut whole)
        .into_iter()
        .skip(1)
        .map(|b| b.ids)
        .collect();
    let mut other_rank = Loader::open(&fx.dir, rank1(options(2))).expect("open");
    other_rank
        .load_state(&state)
        .expect("another rank of the same world");
    let got: Vec<_> = collect(&mut other_rank)
        .into_iter()
        .map(|b| b.ids)
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn ranks_cover_the_epoch_like_distributed_sampler() {
    let fx = fixture();
    for setup in setups(&fx) {
        for drop_last in [false, true] {
            let mut positions = Vec::new();
            let mut lens = Vec::new();
            let mut n = 0;
            for rank in 0..3 {
                let mut loader = setup.open(one_per_batch(rank, 3, drop_last));
                n = loader.epoch_samples();
                let batches = collect(&mut loader);
                lens.push(batches.len());
                positions.extend(batches.into_iter().flat_map(|b| b.positions));
            }
            positions.sort_unstable();
            if drop_last {
                // n samples over 3 ranks: n / 3 each, the tail left out.
                assert_eq!(lens, [n / 3; 3], "{}", setup.name);
                assert_eq!(positions, (0..n / 3 * 3).collect::<Vec<_>>());
            } else {
                // Padded to a multiple of 3 by repeating the order's start.
                assert_eq!(lens, [n.div_ceil(3); 3], "{}", setup.name);
                assert_eq!(positions, (0..n.div_ceil(3) * 3).collect::<Vec<_>>());
            }
        }
    }
    // One directory: 10 items over 3 ranks, as DistributedSampler splits
    // them (padded with the first two, or 9 without a repeat).
    for (drop_last, unique) in [(false, 10), (true, 9)] {
        let mut ids: Vec<String> = (0..3)
            .flat_map(|rank| {
                let options = one_per_batch(rank, 3, drop_last);
                collect(&mut Loader::open(&fx.dir, options).expect("open"))
                    .into_iter()
                    .flat_map(|b| b.ids)
            })
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), unique);
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
    // Each clip's draw: the left, centre and right 100x100 of 160x120.
    let xs: Vec<f64> = batch.geometries.iter().map(|g| g.rect[0] * 160.0).collect();
    assert_eq!(xs, [0.0, 30.0, 60.0, 0.0, 30.0, 60.0]);
    assert!(
        batch
            .geometries
            .iter()
            .all(|g| g.out == (100, 100) && !g.flip)
    );
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
    // A value out of its range is a typed error that names the option.
    for (options, option, given) in [
        (
            LoaderOptions {
                frames: 0,
                ..eval_options()
            },
            "frames",
            "0",
        ),
        (
            LoaderOptions {
                batch_size: 0,
                ..eval_options()
            },
            "batch_size",
            "0",
        ),
        (
            LoaderOptions {
                fps: Some(-2.5),
                ..eval_options()
            },
            "fps",
            "-2.5",
        ),
    ] {
        match Loader::open(&fx.dir, options).map(|_| ()) {
            Err(gulp_loader::Error::InvalidOption {
                option: o,
                given: g,
                expected,
            }) => {
                assert_eq!((o, g.as_str()), (option, given));
                assert!(!expected.is_empty());
            }
            other => panic!("{option}: {other:?}"),
        }
    }
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

/// Small, quick clips: one 32x32 centre frame per sample, in the order of
/// the epoch's composition.
fn quick_options() -> LoaderOptions {
    LoaderOptions {
        order: Order {
            shuffle: Shuffle::Off,
            drop_last: false,
            ..Order::default()
        },
        frames: 1,
        spatial: Spatial {
            resize: Some(40),
            size: Some((32, 32)),
            crop: CropMode::Center,
            flip: false,
        },
        batch_size: 4,
        train: Some(false),
        threads: Some(2),
        ..LoaderOptions::default()
    }
}

/// Why a loader of `sources` with `options` cannot be made.
fn open_err(sources: &[Source], options: LoaderOptions) -> String {
    Loader::from_sources(sources, options)
        .expect_err("the loader is refused")
        .to_string()
}

/// (id, source) of every clip of the current epoch, in order.
fn served_ids(loader: &mut Loader) -> Vec<(String, usize)> {
    collect(loader)
        .into_iter()
        .flat_map(|b| b.ids.into_iter().zip(b.sources))
        .collect()
}

fn counts<T: Ord + Clone>(values: impl IntoIterator<Item = T>) -> BTreeMap<T, usize> {
    let mut out = BTreeMap::new();
    for v in values {
        *out.entry(v).or_insert(0) += 1;
    }
    out
}

#[test]
fn an_epochs_composition_follows_the_sources_exactly() {
    let fx = fixture();
    let mix = |a: Amount, b: Amount| {
        vec![
            Source::new(&fx.dir).amount(a),
            Source::new(&fx.other).amount(b),
        ]
    };
    // Weights: shares of an epoch of 20 samples, exactly, for every seed
    // and epoch.
    for seed in 0..3 {
        let options = LoaderOptions {
            samples_per_epoch: Some(20),
            order: Order {
                seed,
                ..Order::default()
            },
            ..quick_options()
        };
        let sources = mix(Amount::Weight(0.75), Amount::Weight(0.25));
        let mut loader = Loader::from_sources(&sources, options).expect("open");
        assert_eq!(loader.epoch_samples(), 20);
        for epoch in 0..3 {
            loader.set_epoch(epoch);
            let served = served_ids(&mut loader);
            let per_source = counts(served.iter().map(|(_, s)| *s));
            assert_eq!(per_source, BTreeMap::from([(0, 15), (1, 5)]), "seed {seed}");
            // batch.sources names the directory each clip came from.
            assert!(
                served
                    .iter()
                    .all(|(id, s)| id.starts_with(["item-", "other-"][*s]))
            );
        }
    }
    // Repeat and choose: every item of the first twice, 4 distinct of the
    // second, another 4 each epoch.
    let sources = mix(Amount::Repeat(2.0), Amount::Choose(4));
    let mut loader = Loader::from_sources(&sources, quick_options()).expect("open");
    let mut chosen = Vec::new();
    for epoch in 0..4 {
        loader.set_epoch(epoch);
        let per_id = counts(served_ids(&mut loader).into_iter().map(|(id, _)| id));
        let (first, second): (Vec<_>, Vec<_>) =
            per_id.iter().partition(|(id, _)| id.starts_with("item-"));
        assert_eq!(first.len(), 10);
        assert!(first.iter().all(|(_, n)| **n == 2));
        assert_eq!(
            (second.len(), second.iter().all(|(_, n)| **n == 1)),
            (4, true)
        );
        chosen.push(
            second
                .into_iter()
                .map(|(id, _)| id.clone())
                .collect::<Vec<_>>(),
        );
    }
    assert!(chosen.windows(2).any(|w| w[0] != w[1]), "{chosen:?}");
    // Every sample of both, once.
    let mut loader =
        Loader::from_sources(&mix(Amount::All, Amount::All), quick_options()).expect("open");
    assert_eq!(served_ids(&mut loader).len(), 16);
}

#[test]
fn each_source_numbers_its_labels_or_all_share_one_index() {
    let fx = fixture();
    let sources = [Source::new(&fx.dir), Source::new(&fx.other)];
    let labels_of = |shared_labels: bool| -> HashMap<String, i64> {
        let options = LoaderOptions {
            shared_labels,
            ..quick_options()
        };
        let mut loader = Loader::from_sources(&sources, options).expect("open");
        collect(&mut loader)
            .into_iter()
            .flat_map(|b| b.ids.into_iter().zip(b.labels))
            .collect()
    };
    // Own: "bars" is 1 in the first directory, 0 in the second.
    let own = labels_of(false);
    assert_eq!((own["item-0"], own["item-1"]), (1, 0));
    assert_eq!((own["other-1"], own["other-0"]), (0, 1));
    // Shared: the first's numbering, then "rings" after it.
    let shared = labels_of(true);
    assert_eq!((shared["item-0"], shared["item-1"]), (1, 0));
    assert_eq!((shared["other-1"], shared["other-0"]), (1, 2));
}

#[test]
fn ids_and_where_keep_exactly_the_chosen_items() {
    let fx = fixture();
    let only = |source: Source| {
        let mut loader = Loader::from_sources(&[source], quick_options()).expect("open");
        let ids: Vec<String> = served_ids(&mut loader)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        (ids, loader.items())
    };
    let list = fx.dir.parent().expect("tmp").join("ids.txt");
    std::fs::write(
        &list,
        "# the validation split\nitem-7\n\n  item-2\nitem-4\n",
    )
    .expect("list");
    let ids = gulp_loader::read_ids(&list).expect("read");
    assert_eq!(ids, ["item-7", "item-2", "item-4"]);
    let (served, items) = only(Source {
        ids: Some(ids),
        ..Source::new(&fx.dir)
    });
    // In the directory's order, whatever the list's.
    assert_eq!(
        (served, items),
        (vec!["item-2".into(), "item-4".into(), "item-7".into()], 3)
    );
    let (served, _) = only(
        Source::new(&fx.dir)
            .filter(|_, meta| Ok(meta.get("label").and_then(Value::as_str) == Some("bars"))),
    );
    let bars: Vec<String> = fx
        .items
        .iter()
        .filter(|(_, label, _)| label == "bars")
        .map(|(id, _, _)| id.clone())
        .collect();
    assert_eq!(served, bars);
    // Both: the listed ids the filter keeps.
    let (served, _) = only(Source {
        ids: Some(vec!["item-1".into(), "item-2".into()]),
        ..Source::new(&fx.dir).filter(|id, _| Ok(id.ends_with('2')))
    });
    assert_eq!(served, ["item-2"]);
    let unknown = Source {
        ids: Some(vec!["item-2".into(), "item-99".into()]),
        ..Source::new(&fx.dir)
    };
    let msg = open_err(&[unknown], quick_options());
    assert!(
        msg.contains("\"item-99\"") && msg.contains(&fx.dir.display().to_string()),
        "{msg}"
    );
    let failing = Source::new(&fx.dir).filter(|id, _| match id {
        "item-5" => Err("no".into()),
        _ => Ok(true),
    });
    let msg = open_err(&[failing], quick_options());
    assert!(msg.contains("\"item-5\"") && msg.contains("where"), "{msg}");
}

#[test]
fn balanced_sampling_counts_each_class_equally() {
    let fx = fixture();
    // "group": 7 items of class 0, 3 of class 1.
    let group: HashMap<String, i64> = fx
        .metas
        .iter()
        .map(|(id, m)| {
            (
                id.clone(),
                m.get("group").and_then(Value::as_i64).expect("group"),
            )
        })
        .collect();
    for (samples_per_epoch, per_class) in [(None, [5, 5]), (Some(11), [5, 6]), (Some(31), [15, 16])]
    {
        let options = LoaderOptions {
            sampler: Sampler::Balanced,
            target: Target::Key("group".into()),
            samples_per_epoch,
            ..quick_options()
        };
        let mut loader = Loader::open(&fx.dir, options).expect("open");
        for epoch in 0..4 {
            loader.set_epoch(epoch);
            let batches = collect(&mut loader);
            let classes = counts(batches.iter().flat_map(|b| b.labels.iter().copied()));
            let mut got: Vec<usize> = classes.values().copied().collect();
            got.sort_unstable();
            assert_eq!(got, per_class, "{samples_per_epoch:?}, epoch {epoch}");
            // Labels are the class of the item served.
            for b in &batches {
                for (id, label) in b.ids.iter().zip(&b.labels) {
                    assert_eq!(group[id], *label);
                }
            }
        }
    }
    // A target of several keys has no one class to balance.
    let several = LoaderOptions {
        sampler: Sampler::Balanced,
        target: Target::Keys(vec!["group".into(), "verb_class".into()]),
        ..quick_options()
    };
    let err = open_err(&[Source::new(&fx.dir)], several);
    assert!(err.contains("one class per sample"), "{err}");
}

#[test]
fn weighted_sampling_follows_each_items_weight() {
    let fx = fixture();
    // Item k weighs k: an epoch of 45 = 0 + 1 + ... + 9 samples holds item
    // k exactly k times.
    let weigh = |id: &str, _: &Value| {
        id.trim_start_matches("item-")
            .parse::<f64>()
            .map_err(|e| e.to_string())
    };
    let source = Source {
        weights: Some(ItemWeights::Fn(Arc::new(weigh))),
        ..Source::new(&fx.dir)
    };
    let options = LoaderOptions {
        samples_per_epoch: Some(45),
        ..quick_options()
    };
    let mut loader =
        Loader::from_sources(std::slice::from_ref(&source), options.clone()).expect("open");
    for epoch in 0..2 {
        loader.set_epoch(epoch);
        let per_id = counts(served_ids(&mut loader).into_iter().map(|(id, _)| id));
        for k in 1..10 {
            assert_eq!(per_id[&format!("item-{k}")], k, "epoch {epoch}");
        }
        assert!(!per_id.contains_key("item-0"));
    }
    let bad = Source {
        weights: Some(ItemWeights::Fn(Arc::new(|id, _| {
            Ok(if id == "item-3" { -1.0 } else { 1.0 })
        }))),
        ..Source::new(&fx.dir)
    };
    let err = open_err(&[bad], options.clone());
    assert!(
        err.contains("\"item-3\"") && err.contains("weights"),
        "{err}"
    );
    let balanced = LoaderOptions {
        sampler: Sampler::Balanced,
        ..options
    };
    let err = open_err(&[source], balanced);
    assert!(err.contains("exclude"), "{err}");
}

/// The expected target of item `id` as the meta gives it.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn expected_targets(fx: &Fixture, id: &str, target: &Target) -> TargetValues {
    let m = &fx.metas[id];
    let int = |k: &str| m.get(k).and_then(Value::as_i64).expect("int");
    match target {
        Target::Key(k) => TargetValues::Int64(vec![int(k)]),
        Target::Keys(keys) => TargetValues::Int64(keys.iter().map(|k| int(k)).collect()),
        Target::Float(k) => TargetValues::Float32(vec![
            m.get(k).and_then(Value::as_f64).expect("number") as f32,
        ]),
        Target::MultiHot { key, classes } => {
            let mut hot = vec![0f32; *classes];
            for c in m.get(key).and_then(Value::as_array).expect("list") {
                hot[c.as_i64().expect("class") as usize] = 1.0;
            }
            TargetValues::Float32(hot)
        }
        _ => unreachable!(),
    }
}

#[test]
#[allow(clippy::cast_possible_truncation)]
fn every_target_form_matches_the_meta() {
    let fx = fixture();
    let computed: gulp_loader::TargetFn = Arc::new(|_, meta, _| {
        let n = meta
            .get("duration")
            .and_then(Value::as_f64)
            .ok_or("no duration")?;
        Ok(Some(Targets {
            shape: vec![2],
            values: TargetValues::Int64(vec![(n * 10.0).round() as i64, 1]),
        }))
    });
    let forms = [
        (Target::Key("verb_class".into()), vec![]),
        (
            Target::Keys(vec!["verb_class".into(), "noun_class".into()]),
            vec![2],
        ),
        (Target::Float("score".into()), vec![]),
        (
            Target::MultiHot {
                key: "tags".into(),
                classes: 4,
            },
            vec![4],
        ),
        (Target::Computed(computed), vec![2]),
    ];
    for (target, shape) in forms {
        let options = LoaderOptions {
            target: target.clone(),
            on_missing: OnMissing::Skip,
            ..quick_options()
        };
        let mut loader = Loader::open(&fx.dir, options).expect("open");
        // Only "score" is missing, from item-4.
        let float = matches!(target, Target::Float(_));
        assert_eq!(loader.missing(), usize::from(float), "{target:?}");
        let mut seen = 0;
        for b in collect(&mut loader) {
            let mut full = vec![b.ids.len()];
            full.extend(&shape);
            assert_eq!(b.targets.shape, full, "{target:?}");
            let width: usize = shape.iter().product();
            for (k, id) in b.ids.iter().enumerate() {
                let want = match &target {
                    Target::Computed(_) => {
                        let n = fx
                            .items
                            .iter()
                            .find(|(i, _, _)| i == id)
                            .expect("item")
                            .2
                            .len();
                        TargetValues::Int64(vec![n as i64, 1])
                    }
                    other => expected_targets(&fx, id, other),
                };
                let got = match &b.targets.values {
                    TargetValues::Int64(v) => {
                        TargetValues::Int64(v[k * width..(k + 1) * width].to_vec())
                    }
                    TargetValues::Float32(v) => {
                        TargetValues::Float32(v[k * width..(k + 1) * width].to_vec())
                    }
                };
                assert_eq!(got, want, "{target:?} {id}");
                seen += 1;
            }
            // batch.labels: the classes of a one-key target, else nothing.
            match (&target, &b.targets.values) {
                (Target::Key(_), TargetValues::Int64(v)) => assert_eq!(&b.labels, v),
                _ => assert!(b.labels.is_empty()),
            }
        }
        assert_eq!(seen, 10 - usize::from(float));
    }
    // By default, a missing value is an error naming the directory, the
    // item and the key.
    let target_err = |target| {
        let options = LoaderOptions {
            target,
            ..quick_options()
        };
        open_err(&[Source::new(&fx.dir)], options)
    };
    let msg = target_err(Target::Float("score".into()));
    assert!(
        msg.contains("\"item-4\"")
            && msg.contains("score")
            && msg.contains(&fx.dir.display().to_string()),
        "{msg}"
    );
    let msg = target_err(Target::Key("tags".into()));
    assert!(msg.contains("not a class"), "{msg}");
    let msg = target_err(Target::MultiHot {
        key: "tags".into(),
        classes: 3,
    });
    assert!(msg.contains("0..3"), "{msg}");
}

#[test]
fn segment_clips_fall_inside_their_segments() {
    let fx = fixture();
    // Eval: 2 clips per segment, placed inside it.
    let options = LoaderOptions {
        frames: 3,
        sampling: Sampling::Window,
        clips: 2,
        segments: Some(Segments::new("segments")),
        target: Target::Key("verb_class".into()),
        batch_size: 8,
        ..quick_options()
    };
    let mut loader = Loader::open(&fx.dir, options.clone()).expect("open");
    assert_eq!(loader.epoch_samples(), 20); // 2 segments per item
    let mut per_item: HashMap<String, Vec<[usize; 2]>> = HashMap::new();
    let mut spans_of_frames = Vec::new();
    for b in collect(&mut loader) {
        for (k, id) in b.ids.iter().enumerate() {
            let n = fx
                .items
                .iter()
                .find(|(i, _, _)| i == id)
                .expect("item")
                .2
                .len();
            let [start, end] = b.segments[k];
            let expected = [[0, n / 2], [n / 2, n]];
            assert!(expected.contains(&[start, end]), "{id}: {start}..{end}");
            let idx = &b.indices[k * 3..(k + 1) * 3];
            assert!(
                idx.iter().all(|&f| start <= f && f < end),
                "{id}: {idx:?} in {start}..{end}"
            );
            // The window of clip v of 2, inside the segment.
            let want: Vec<usize> = clip_indices(
                Sampling::Window,
                3,
                1,
                end - start,
                gulp_loader::Placement::Fixed {
                    index: b.views[k],
                    count: 2,
                },
            )
            .into_iter()
            .map(|f| f + start)
            .collect();
            assert_eq!(idx, &want[..]);
            // The segment's own key first, then the item's.
            let verb = fx.metas[id]
                .get("verb_class")
                .and_then(Value::as_i64)
                .expect("verb");
            assert_eq!(b.labels[k], if start == 0 { 7 } else { verb });
            per_item.entry(id.clone()).or_default().push([start, end]);
            spans_of_frames.push((id.clone(), start, end));
        }
    }
    assert_eq!(per_item.len(), 10);
    assert!(per_item.values().all(|v| v.len() == 4)); // 2 segments x 2 clips
    // The same segments in seconds (ActivityNet's form, 10 fps from the
    // duration) give the same frames; the label is the segment's, else the
    // item's.
    let seconds = LoaderOptions {
        segments: Some(Segments::activitynet()),
        target: Target::Label,
        ..options
    };
    let mut loader = Loader::open(&fx.dir, seconds).expect("open");
    let mut spans_of_seconds = Vec::new();
    for b in collect(&mut loader) {
        for (k, id) in b.ids.iter().enumerate() {
            let [start, end] = b.segments[k];
            spans_of_seconds.push((id.clone(), start, end));
            let label = &fx.items.iter().find(|(i, _, _)| i == id).expect("item").1;
            let own = if start == 0 {
                "fractal"
            } else {
                label.as_str()
            };
            assert_eq!(b.labels[k], i64::from(own == "bars"), "{id}");
        }
    }
    assert_eq!(spans_of_frames, spans_of_seconds);
    // Training: random clips, still inside their segments.
    let train = LoaderOptions {
        frames: 4,
        sampling: Sampling::Segments,
        segments: Some(Segments::new("segments")),
        ..train_options(2)
    };
    let mut loader = Loader::open(&fx.dir, train).expect("open");
    for b in collect(&mut loader) {
        for k in 0..b.ids.len() {
            let [start, end] = b.segments[k];
            assert!(
                b.indices[k * 4..(k + 1) * 4]
                    .iter()
                    .all(|&f| start <= f && f < end)
            );
        }
    }
    // An item without the list: an error naming it and the key, or left
    // out and counted.
    let options = LoaderOptions {
        segments: Some(Segments::new("chapters")),
        ..quick_options()
    };
    let err = open_err(&[Source::new(&fx.dir)], options.clone());
    assert!(err.contains("chapters") && err.contains("item-0"), "{err}");
    let skip = LoaderOptions {
        on_missing: OnMissing::Skip,
        ..options
    };
    let loader = Loader::open(&fx.dir, skip).expect("open");
    assert_eq!((loader.missing(), loader.epoch_samples()), (10, 0));
}

/// 48 items of 2 frames (64x48) in 8 chunks of 6: item `k` is `chunk-k`,
/// in chunk `k / 6`.
fn chunked_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("chunks");
    let frames = ffmpeg_frames("testsrc2", 64, 48, 2);
    let items: Vec<_> = (0..48)
        .map(|k| (format!("chunk-{k}"), "bars".to_owned(), frames.clone()))
        .collect();
    write_dir(&dir, &items, 0, 6, &mut HashMap::new());
    (tmp, dir)
}

/// Training options of a shuffle by chunks (windows of `window` chunks),
/// batches of 2 clips, on `rank` of `world_size`.
fn by_chunks(window: usize, rank: usize, world_size: usize, threads: usize) -> LoaderOptions {
    LoaderOptions {
        frames: 2,
        sampling: Sampling::Uniform,
        spatial: Spatial {
            resize: None,
            size: Some((40, 40)),
            crop: CropMode::Random,
            flip: true,
        },
        batch_size: 2,
        order: Order {
            shuffle: Shuffle::Chunks { window },
            seed: 3,
            rank,
            world_size,
            drop_last: false,
        },
        train: Some(true),
        threads: Some(threads),
        labels: gulp_loader::Labels {
            key: "label".into(),
            index: Some(vec![("bars".into(), 0)]),
        },
        ..LoaderOptions::default()
    }
}

fn chunk_of(id: &str) -> usize {
    id.trim_start_matches("chunk-")
        .parse::<usize>()
        .expect("id")
        / 6
}

#[test]
fn a_shuffle_by_chunks_gives_each_rank_its_own_chunks() {
    let (_tmp, dir) = chunked_dir();
    let ids = |options: LoaderOptions| -> Vec<String> {
        let mut loader = Loader::open(&dir, options).expect("open");
        collect(&mut loader)
            .into_iter()
            .flat_map(|b| b.ids)
            .collect()
    };
    // 2 ranks, windows of 2 chunks: each rank reads 4 chunks of its own,
    // 2 at a time (each 12 consecutive clips are one window's).
    let mut seen = Vec::new();
    let mut chunks_of_rank = Vec::new();
    for rank in 0..2 {
        let mine = ids(by_chunks(2, rank, 2, 2));
        assert_eq!(mine.len(), 24);
        for window in mine.chunks(12) {
            let mut c: Vec<usize> = window.iter().map(|id| chunk_of(id)).collect();
            c.sort_unstable();
            c.dedup();
            assert_eq!(c.len(), 2, "one window, two chunks: {window:?}");
        }
        let mut c: Vec<usize> = mine.iter().map(|id| chunk_of(id)).collect();
        c.sort_unstable();
        c.dedup();
        chunks_of_rank.push(c);
        seen.extend(mine);
    }
    assert!(
        chunks_of_rank[0]
            .iter()
            .all(|c| !chunks_of_rank[1].contains(c)),
        "the ranks share no chunk: {chunks_of_rank:?}"
    );
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 48, "every item once over the ranks");
    // The same batches on any thread count; another order than the
    // shuffle of all items; another epoch, another order.
    let one = ids(by_chunks(2, 0, 1, 1));
    assert_eq!(one, ids(by_chunks(2, 0, 1, 2)));
    let plain = ids(LoaderOptions {
        order: Order {
            shuffle: Shuffle::Items,
            ..by_chunks(2, 0, 1, 1).order
        },
        ..by_chunks(2, 0, 1, 1)
    });
    assert_ne!(one, plain);
    let mut loader = Loader::open(&dir, by_chunks(2, 0, 1, 1)).expect("open");
    loader.set_epoch(1);
    let next: Vec<String> = collect(&mut loader)
        .into_iter()
        .flat_map(|b| b.ids)
        .collect();
    assert_ne!(one, next);
    let err = Loader::open(&dir, by_chunks(0, 0, 1, 1)).expect_err("a window of 0");
    assert!(err.to_string().contains("at least 1 chunk"), "{err}");
}

#[test]
fn a_shuffle_by_chunks_resumes_on_another_world_size() {
    let (_tmp, dir) = chunked_dir();
    let open = |rank, ws| Loader::open(&dir, by_chunks(2, rank, ws, 1)).expect("open");
    // The reference: the order laid out for 2 ranks, served by one rank
    // from position 0.
    let mut reference = Served::new();
    let mut one = open(0, 1);
    one.load_state(&open(0, 2).state())
        .expect("a state of 2 ranks");
    serve(&collect(&mut one), &mut reference);
    assert_eq!(reference.len(), 48);
    // 2 ranks yield 3 batches each and save; the job resumes on 3 ranks.
    let mut served = Served::new();
    let mut states = Vec::new();
    for rank in 0..2 {
        let mut loader = open(rank, 2);
        let first: Vec<_> = loader
            .iter()
            .take(3)
            .collect::<Result<_, _>>()
            .expect("batches");
        serve(&first, &mut served);
        states.push(loader.state());
    }
    assert!(
        states
            .iter()
            .all(|s| s.position == Some(12) && s.layout == 2)
    );
    for rank in 0..3 {
        let mut loader = open(rank, 3);
        loader
            .load_state(&states[rank % 2])
            .expect("elastic resume");
        assert_eq!(loader.state().layout, 2, "the epoch keeps its layout");
        serve(&collect(&mut loader), &mut served);
        assert_eq!(loader.epoch(), 1);
        assert_eq!(loader.state().layout, 3, "the next epoch is laid out for 3");
    }
    for (position, clips) in &served {
        assert_eq!(clips.len(), 1, "position {position} served once");
        assert!(clips[0] == reference[position][0], "position {position}");
    }
    assert_eq!(served.len(), 48);
}

/// With index files, a loader that keeps every item as it is holds nothing
/// per item, and one that keeps a subset by id or by a predicate on the
/// label, or weighs items by label, holds the subset: the batches, targets
/// and resume state are the same as read from the meta files, on one
/// directory and on a mixture with balanced classes; a filter on another
/// key, a function, or a target the index has no column for reads the
/// meta files.
#[test]
fn batches_are_the_same_with_and_without_index_files() {
    let fx = fixture();
    let indexed = |policy| gulp_io::GulpDirectory::options().index(policy);
    let bars = Predicate::Compare {
        key: "label".into(),
        op: Compare::Eq,
        value: "bars".into(),
    };
    let setups: Vec<(&str, Vec<Source>, LoaderOptions)> = vec![
        (
            "one directory",
            vec![Source::new(&fx.dir)],
            train_options(2),
        ),
        (
            "a balanced mixture",
            vec![
                Source::new(&fx.dir).amount(Amount::Weight(0.7)),
                Source::new(&fx.other).amount(Amount::Weight(0.3)),
            ],
            LoaderOptions {
                sampler: Sampler::Balanced,
                samples_per_epoch: Some(14),
                shared_labels: true,
                ..train_options(2)
            },
        ),
        ("evaluation", vec![Source::new(&fx.dir)], eval_options()),
        (
            "an id subset",
            vec![Source {
                ids: Some(
                    ["item-7", "item-2", "item-1", "item-2", "item-5"]
                        .map(String::from)
                        .into(),
                ),
                ..Source::new(&fx.dir)
            }],
            eval_options(),
        ),
        (
            "a label predicate and label weights",
            vec![
                Source::new(&fx.dir).keep(Predicate::Not(Box::new(bars.clone()))),
                Source::new(&fx.other)
                    .keep(Predicate::Or(vec![
                        bars.clone(),
                        Predicate::In {
                            key: "label".into(),
                            values: vec!["rings".into()],
                        },
                    ]))
                    .weigh(WeightColumn::Replace {
                        key: "label".into(),
                        table: vec![("rings".into(), 3.0)],
                        default: Some(1.0),
                    }),
            ],
            LoaderOptions {
                samples_per_epoch: Some(12),
                ..train_options(2)
            },
        ),
        ("evaluation", vec![Source::new(&fx.dir)], eval_options()),
    ];
    for (name, sources, options) in setups {
        let open = |policy| {
            let options = LoaderOptions {
                open: indexed(policy),
                ..options.clone()
            };
            Loader::from_sources(&sources, options).expect(name)
        };
        let mut plain = open(gulp_io::IndexPolicy::Off);
        let mut with = open(gulp_io::IndexPolicy::Always);
        assert!(!plain.reads_index_files(), "{name}");
        assert!(with.reads_index_files(), "{name}");
        assert_eq!(with.items(), plain.items(), "{name}");
        let (a, b) = (collect(&mut plain), collect(&mut with));
        assert!(!a.is_empty(), "{name}");
        assert_eq!(a.len(), b.len(), "{name}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (&x.ids, &x.indices, &x.sources),
                (&y.ids, &y.indices, &y.sources)
            );
            assert_eq!((&x.targets, &x.labels), (&y.targets, &y.labels), "{name}");
            assert!(x.frames == y.frames, "{name}: batch {} differs", x.index);
        }
        // A state saved without the index resumes with it.
        let mut first = open(gulp_io::IndexPolicy::Off);
        let mut it = first.iter();
        it.next().expect("a batch").expect("batch");
        drop(it);
        let state = first.state();
        let mut resumed = open(gulp_io::IndexPolicy::Auto);
        assert!(resumed.reads_index_files(), "{name}");
        resumed.load_state(&state).expect(name);
        let rest = collect(&mut resumed);
        assert_eq!(
            rest.len(),
            a.len() - 1,
            "{name}: {} items, {} batches",
            with.items(),
            a.len()
        );
        assert_eq!(rest[0].ids, a[1].ids, "{name}");
    }
    // A target of other keys is read from each sample's item when its
    // batch is made: the loader opens from the index file, and its batches
    // are the meta path's.
    for target in [
        Target::Key("group".into()),
        Target::Keys(vec!["verb_class".into(), "noun_class".into()]),
        Target::Float("duration".into()),
    ] {
        let open = |policy| {
            let options = LoaderOptions {
                open: indexed(policy),
                target: target.clone(),
                ..eval_options()
            };
            Loader::from_sources(&[Source::new(&fx.dir)], options).expect("keyed")
        };
        let (mut plain, mut with) = (
            open(gulp_io::IndexPolicy::Off),
            open(gulp_io::IndexPolicy::Always),
        );
        assert!(
            with.reads_index_files() && !plain.reads_index_files(),
            "{target:?}"
        );
        let (a, b) = (collect(&mut plain), collect(&mut with));
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (&x.ids, &x.targets, &x.labels),
                (&y.ids, &y.targets, &y.labels),
                "{target:?}"
            );
        }
    }
    // A missing value is then an error when its batch is made, naming the
    // item and the key (item 4 has no score).
    let options = LoaderOptions {
        open: indexed(gulp_io::IndexPolicy::Always),
        target: Target::Float("score".into()),
        ..eval_options()
    };
    let mut loader = Loader::from_sources(&[Source::new(&fx.dir)], options).expect("score");
    assert!(loader.reads_index_files());
    let err = loader
        .iter()
        .find_map(Result::err)
        .expect("item 4 has no score")
        .to_string();
    assert!(err.contains("item-4") && err.contains("score"), "{err}");
    // A predicate on another key, or a function, and a balanced sampler on
    // another key, read the meta files.
    let options = LoaderOptions {
        open: indexed(gulp_io::IndexPolicy::Auto),
        ..eval_options()
    };
    let group = Source::new(&fx.dir).keep(Predicate::Compare {
        key: "group".into(),
        op: Compare::Ge,
        value: Value::Int(1),
    });
    let function = Source::new(&fx.dir).filter(|_, m| Ok(m.get("label").is_some()));
    for source in [group, function] {
        let loader = Loader::from_sources(&[source], options.clone()).expect("subset");
        assert!(!loader.reads_index_files());
    }
    let keyed = LoaderOptions {
        target: Target::Key("group".into()),
        sampler: Sampler::Balanced,
        ..options
    };
    let loader = Loader::from_sources(&[Source::new(&fx.dir)], keyed).expect("key");
    assert!(!loader.reads_index_files());
}

/// A predicate and weights written as columns keep and weigh what the
/// same functions of the meta do (the same batches, subset and weights),
/// and a value that cannot be compared is an error naming the item.
#[test]
fn column_predicates_and_weights_match_the_same_functions() {
    let fx = fixture();
    let options = LoaderOptions {
        open: gulp_io::GulpDirectory::options().index(gulp_io::IndexPolicy::Off),
        samples_per_epoch: Some(9),
        ..train_options(2)
    };
    // duration > 0.3 and group == 0, weights = score (2.0 where missing).
    let columns = Source::new(&fx.dir)
        .keep(Predicate::And(vec![
            Predicate::Compare {
                key: "duration".into(),
                op: Compare::Gt,
                value: Value::Float(0.3),
            },
            Predicate::Compare {
                key: "group".into(),
                op: Compare::Eq,
                value: Value::Int(0),
            },
        ]))
        .weigh(WeightColumn::Key {
            key: "score".into(),
            default: Some(2.0),
        });
    let mut functions = Source::new(&fx.dir).filter(|_, m| {
        Ok(m.get("duration").and_then(Value::as_f64).unwrap() > 0.3
            && m.get("group").and_then(Value::as_i64) == Some(0))
    });
    functions.weights = Some(ItemWeights::Fn(Arc::new(|_, m: &Value| {
        Ok(m.get("score").and_then(Value::as_f64).unwrap_or(2.0))
    })));
    let mut a = Loader::from_sources(&[columns], options.clone()).expect("columns");
    let mut b = Loader::from_sources(&[functions], options.clone()).expect("functions");
    assert!(a.items() > 0 && a.items() < fx.items.len(), "{}", a.items());
    assert_eq!(a.items(), b.items());
    let (x, y) = (collect(&mut a), collect(&mut b));
    assert_eq!(x.len(), y.len());
    for (x, y) in x.iter().zip(&y) {
        assert_eq!(x.ids, y.ids);
    }
    // The same subset and weights: a state saved by one loads in the other.
    b.load_state(&a.state()).expect("same subset and weights");

    let bad = Source::new(&fx.dir).keep(Predicate::Compare {
        key: "label".into(),
        op: Compare::Lt,
        value: Value::Int(3),
    });
    let err = Loader::from_sources(&[bad], options).expect_err("a string against a number");
    let text = err.to_string();
    assert!(
        text.contains("item-0") && text.contains("where") && text.contains("cannot be compared"),
        "{text}"
    );
}

/// The same clips, batch for batch, from a copy of the directory in a store
/// held in memory (`memory://`, the code paths of a bucket: ranges, the
/// node cache and its prefetcher) as from the directory on disk: without
/// a cache, and through a node cache with each fetch policy.
/// Held by the tests that read a store in memory: one counts the process's
/// requests to the stores (`gulp_store::requests`), which another's would
/// add to.
#[cfg(feature = "s3")]
static STORE_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(feature = "s3")]
#[test]
fn a_directory_in_a_store_gives_the_batches_it_gives_on_disk() {
    use gulp_store::{CacheFetch, CacheOptions};
    let _alone = STORE_TESTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let fx = fixture();
    let url = PathBuf::from("memory://loader/train");
    let copied = gulp_io::copy_dir(&fx.dir, &url, &mut |_| {}).expect("copy");
    assert!(copied.copied > 0, "{copied:?}");
    let on_disk = collect(&mut Loader::open(&fx.dir, eval_options()).expect("open"));
    let same = |batches: &[gulp_loader::Batch], how: &str| {
        assert_eq!(batches.len(), on_disk.len(), "{how}");
        for (a, b) in batches.iter().zip(&on_disk) {
            assert_eq!(
                (&a.ids, &a.labels, a.shape),
                (&b.ids, &b.labels, b.shape),
                "{how}"
            );
            assert!(a.frames == b.frames, "{how}: batch {} differs", a.index);
        }
    };
    let uncached = LoaderOptions {
        open: gulp_io::GulpDirectory::options().cache(None),
        ..eval_options()
    };
    same(
        &collect(&mut Loader::open(&url, uncached).expect("open")),
        "no cache",
    );
    for fetch in [CacheFetch::Ranges, CacheFetch::Chunks, CacheFetch::Auto] {
        let cache = tempfile::tempdir().expect("tempdir");
        let options = LoaderOptions {
            open: gulp_io::GulpDirectory::options().cache(Some(CacheOptions {
                fetch,
                ..CacheOptions::new(cache.path())
            })),
            ..eval_options()
        };
        let mut loader = Loader::open(&url, options.clone()).expect("open");
        // Two epochs: the second reads what the first left in the cache
        // (with `auto`, while the chunks are made whole behind it).
        same(&collect(&mut loader), &format!("{fetch:?}, first epoch"));
        same(&collect(&mut loader), &format!("{fetch:?}, second epoch"));
        let kept = std::fs::read_dir(cache.path()).expect("cache").count();
        assert!(kept > 0, "{fetch:?}: nothing was cached");
        if fetch == CacheFetch::Auto {
            // Every chunk is made whole behind the second epoch, and the
            // third reads them all from the cache, the same batches.
            let pending = || {
                let dir = options.open.open(&url).expect("open");
                dir.chunks().iter().filter(|c| c.fill_pending()).count()
            };
            let start = std::time::Instant::now();
            while pending() > 0 && start.elapsed() < std::time::Duration::from_secs(30) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert_eq!(pending(), 0, "chunks left to fill");
            let before = gulp_store::requests();
            same(&collect(&mut loader), "auto, third epoch");
            assert_eq!(
                gulp_store::requests() - before,
                0,
                "the third epoch asked the store"
            );
        }
    }
}

/// The whole data objects a node cache holds: the chunk number of each.
#[cfg(feature = "s3")]
fn cached_chunks(cache: &Path) -> Vec<usize> {
    let mut found = Vec::new();
    let mut dirs = vec![cache.join("objects")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("cache listing") {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if path.is_dir() {
                dirs.push(path.clone());
            } else if let Some(rest) = name.strip_prefix("data_")
                && let Some((chunk, version)) = rest.split_once(".gulp~")
                && !version.contains('.')
            {
                found.push(chunk.parse().expect("chunk number"));
            }
        }
    }
    found.sort_unstable();
    found
}

/// A pass by chunks through a node cache fetches, once it has fetched its
/// own chunks, the chunk the next epoch reads first (and plans that
/// epoch), so that the next epoch does not begin by waiting for it: with
/// room for one chunk, the one the cache holds after the pass is the next
/// epoch's first, not the pass's last.
#[cfg(feature = "s3")]
#[test]
fn a_pass_by_chunks_fetches_the_next_epoch_s_first_chunk() {
    use gulp_store::{CacheFetch, CacheOptions};
    let _alone = STORE_TESTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_tmp, dir) = chunked_dir();
    let url = PathBuf::from("memory://lookahead/chunks");
    gulp_io::copy_dir(&dir, &url, &mut |_| {}).expect("copy");
    let chunk = std::fs::metadata(dir.join("data_0.gulp"))
        .expect("chunk")
        .len();
    let cache = tempfile::tempdir().expect("tempdir");
    let options = LoaderOptions {
        open: gulp_io::GulpDirectory::options().cache(Some(CacheOptions {
            fetch: CacheFetch::Chunks,
            limit: Some(chunk + chunk / 2),
            ..CacheOptions::new(cache.path())
        })),
        ..by_chunks(1, 0, 1, 2)
    };
    let mut loader = Loader::open(&url, options).expect("open");
    let first = collect(&mut loader);
    let held = cached_chunks(cache.path());
    let second = collect(&mut loader);
    let last_read = chunk_of(first.last().and_then(|b| b.ids.last()).expect("a batch"));
    let next_first = chunk_of(&second[0].ids[0]);
    assert_ne!(
        last_read, next_first,
        "the seed makes the next epoch begin with another chunk"
    );
    assert_eq!(
        held,
        vec![next_first],
        "epoch 0 ended with chunk {last_read}"
    );
    // The next epoch is the one a loader that did not look ahead gives.
    let mut fresh = Loader::open(&dir, by_chunks(1, 0, 1, 2)).expect("open");
    fresh.set_epoch(1);
    let ids = |b: &[gulp_loader::Batch]| b.iter().flat_map(|b| b.ids.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&second), ids(&collect(&mut fresh)));
}
