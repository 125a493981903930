//! Writes the seed corpora of the fuzz targets from the GulpIO fixtures:
//!
//! ```text
//! cargo run --manifest-path fuzz/Cargo.toml --example seeds [OUT_DIR]
//! ```
//!
//! `OUT_DIR` defaults to `fuzz/seeds`; it gets one folder per target:
//!
//! * `json_meta/`: real meta files as gulpio2 / GulpIO wrote them;
//! * `msgpack_meta/`: the same metas in gulp's msgpack format, plus one with
//!   per-frame checksums, metalayers and awkward values (JSON has none of those);
//! * `msgpack_meta_sealed/`: those msgpack files without their trailer (the
//!   target adds it back), plus one with no header (the target builds it);
//! * `chunk_read/`, `random_ops/`: the gulp-io targets' seeds, defined with
//!   their checks in `crates/gulp-test-support/src/fuzz_checks/io.rs`;
//! * `jpeg_decode/`: every JPEG of `fuzz/jpegs/` behind a few option
//!   prefixes (`jpeg_decode_inputs`). The example first (re)writes the JPEGs
//!   it encodes itself into `fuzz/jpegs/` (baseline 4:4:4 / 4:2:0 / gray
//!   with libjpeg-turbo; progressive, restart markers, 4:2:2, 4:4:0, 4:1:1,
//!   CMYK with jpeg-encoder); the others there (ffmpeg's 4:2:2 and lossless
//!   JPEGs) are committed as they are.
//!
//! The output is deterministic, so re-running it changes nothing.

use std::path::{Path, PathBuf};

use gulp_format::{ChunkMeta, MetaFormat, Value};

/// Small fixtures of different shapes, relative to the repository root.
const FIXTURES: &[(&str, &str)] = &[
    (
        "empty",
        "tests/data/fixtures/gulpio2/empty_chunk/meta_0.gmeta",
    ),
    (
        "extension",
        "tests/data/fixtures/gulpio2/extension/meta_0.gmeta",
    ),
    (
        "padding",
        "tests/data/fixtures/gulpio2/padding/meta_0.gmeta",
    ),
    (
        "same_id_twice",
        "tests/data/fixtures/gulpio2/same_id_twice/meta_0.gmeta",
    ),
    (
        "meta_edge",
        "tests/data/fixtures/gulpio2/meta_edge/meta_0.gmeta",
    ),
    (
        "gulpio1",
        "tests/data/fixtures/gulpio1/v1_basic/meta_0.gmeta",
    ),
];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz/ has a parent")
        .to_path_buf();
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("fuzz/seeds"));
    let json_dir = out.join("json_meta");
    let msgpack_dir = out.join("msgpack_meta");
    let sealed_dir = out.join("msgpack_meta_sealed");
    for dir in [&json_dir, &msgpack_dir, &sealed_dir] {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }

    let msgpack = MetaFormat::Msgpack.serializer();
    let mut packed_files = Vec::new();
    for (name, rel) in FIXTURES {
        let path = root.join(rel);
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let meta =
            gulp_format::read_meta(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        write(&json_dir.join(format!("{name}.json")), &text);
        let packed = msgpack.to_vec(&meta).expect("fixtures convert to msgpack");
        packed_files.push((name.to_string(), packed));
    }

    let rich = rich_meta(&root);
    packed_files.push((
        "rich".to_owned(),
        msgpack.to_vec(&rich).expect("the rich meta converts"),
    ));

    for (name, packed) in &packed_files {
        gulp_format_fuzz::check_msgpack(packed);
        write(&msgpack_dir.join(format!("{name}.msgpack")), packed);
        let content = gulp_format_fuzz::unseal(packed);
        assert_eq!(&gulp_format_fuzz::sealed(content), packed);
        write(&sealed_dir.join(format!("{name}.content")), content);
    }

    // No header: flags 1, one item, two frames, then the sections of an item
    // "a" with two frames and checksums.
    let mut one = ChunkMeta::new();
    let item = one.append(
        "a",
        Value::from("x"),
        [
            gulp_format::FrameInfo::for_jpeg(0, 629),
            gulp_format::FrameInfo::for_jpeg(632, 100),
        ],
    );
    item.frame_checksums = vec![0xdead_beef, 7];
    let packed = msgpack.to_vec(&one).expect("small meta converts");
    let content = gulp_format_fuzz::unseal(&packed);
    let header_len = 1 + gulp_format::MSGPACK_MAGIC.len() + 4;
    let mut headerless = vec![1u8, 1, 2];
    headerless.extend_from_slice(&content[header_len..]);
    assert_eq!(gulp_format_fuzz::sealed(&headerless), packed);
    write(&sealed_dir.join("headerless.content"), &headerless);

    for (target, seeds) in [
        ("chunk_read", gulp_format_fuzz::chunk_read_seeds()),
        ("random_ops", gulp_format_fuzz::random_ops_seeds()),
    ] {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for (name, input) in seeds {
            write(&dir.join(name), &input);
        }
    }

    let jpegs_dir = root.join("fuzz/jpegs");
    for (name, jpeg) in encoded_jpegs() {
        write(&jpegs_dir.join(name), &jpeg);
    }
    let mut jpegs: Vec<_> = std::fs::read_dir(&jpegs_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", jpegs_dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "jpg"))
        .collect();
    jpegs.sort();
    let dir = out.join("jpeg_decode");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for path in jpegs {
        let jpeg = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().expect("a file name").to_string_lossy();
        for (name, input) in gulp_format_fuzz::jpeg_decode_inputs(&stem, &jpeg) {
            gulp_format_fuzz::check_jpeg_decode(&input);
            write(&dir.join(name), &input);
        }
    }

    println!("seeds written under {}", out.display());
}

/// A `width` × `height` test picture of `channels` bytes per pixel: colour
/// ramps, a few hard edges and some texture, so that every block has AC
/// coefficients and the chroma planes differ.
fn picture(width: usize, height: usize, channels: usize) -> Vec<u8> {
    let mut pixels = Vec::with_capacity(width * height * channels);
    for y in 0..height {
        for x in 0..width {
            let edge = if (x / 5 + y / 3) % 2 == 0 { 60 } else { 0 };
            let noise = (x * 7919 + y * 104_729) % 23;
            for c in 0..channels {
                let v = match c {
                    0 => x * 255 / width.max(1) + noise,
                    1 => y * 255 / height.max(1) + edge,
                    2 => (x + y) * 4 + noise * 3,
                    _ => 255 - x * 3,
                };
                pixels.push((v % 256) as u8);
            }
        }
    }
    pixels
}

/// The JPEGs the example encodes itself, by name.
fn encoded_jpegs() -> Vec<(&'static str, Vec<u8>)> {
    use gulp_codec::{Subsampling, encode_jpeg};
    use jpeg_encoder::{ColorType, Encoder, SamplingFactor};

    let turbo = |w: usize, h: usize, channels: usize, sub: Subsampling| {
        encode_jpeg(&picture(w, h, channels), (w, h), channels, 85, sub)
            .expect("libjpeg-turbo encodes the test picture")
    };
    let other = |w: u16, h: u16, color: ColorType, set: &dyn Fn(&mut Encoder<&mut Vec<u8>>)| {
        let channels = match color {
            ColorType::Luma => 1,
            ColorType::Cmyk | ColorType::CmykAsYcck => 4,
            _ => 3,
        };
        let pixels = picture(usize::from(w), usize::from(h), channels);
        let mut out = Vec::new();
        let mut encoder = Encoder::new(&mut out, 80);
        set(&mut encoder);
        encoder
            .encode(&pixels, w, h, color)
            .expect("jpeg-encoder encodes the test picture");
        out
    };
    vec![
        ("s444-33x17.jpg", turbo(33, 17, 3, Subsampling::S444)),
        ("s420-48x32.jpg", turbo(48, 32, 3, Subsampling::S420)),
        ("s420-17x9.jpg", turbo(17, 9, 3, Subsampling::S420)),
        ("gray-33x17.jpg", turbo(33, 17, 1, Subsampling::S444)),
        (
            "s422-35x18.jpg",
            other(35, 18, ColorType::Rgb, &|e| {
                e.set_sampling_factor(SamplingFactor::F_2_1);
            }),
        ),
        (
            "s440-20x21.jpg",
            other(20, 21, ColorType::Rgb, &|e| {
                e.set_sampling_factor(SamplingFactor::F_1_2);
            }),
        ),
        (
            "s411-41x10.jpg",
            other(41, 10, ColorType::Rgb, &|e| {
                e.set_sampling_factor(SamplingFactor::F_4_1);
            }),
        ),
        (
            "progressive-s420-40x24.jpg",
            other(40, 24, ColorType::Rgb, &|e| {
                e.set_sampling_factor(SamplingFactor::F_2_2);
                e.set_progressive(true);
            }),
        ),
        (
            "progressive-gray-19x13.jpg",
            other(19, 13, ColorType::Luma, &|e| e.set_progressive(true)),
        ),
        (
            "restart-s420-48x32.jpg",
            other(48, 32, ColorType::Rgb, &|e| {
                e.set_sampling_factor(SamplingFactor::F_2_2);
                e.set_restart_interval(1);
            }),
        ),
        (
            "restart-progressive-s444-24x16.jpg",
            other(24, 16, ColorType::Rgb, &|e| {
                e.set_progressive(true);
                e.set_restart_interval(2);
            }),
        ),
        ("cmyk-17x9.jpg", other(17, 9, ColorType::Cmyk, &|_| {})),
        (
            "ycck-16x8.jpg",
            other(16, 8, ColorType::CmykAsYcck, &|_| {}),
        ),
    ]
}

/// `meta_edge` with what only msgpack holds: per-frame checksums, metalayers,
/// and a second meta_data entry of awkward values.
fn rich_meta(root: &Path) -> ChunkMeta {
    let path = root.join("tests/data/fixtures/gulpio2/meta_edge/meta_0.gmeta");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut meta = gulp_format::read_meta(&text).expect("meta_edge parses");
    let ids: Vec<String> = meta.ids().map(str::to_owned).collect();
    for (k, id) in ids.iter().enumerate() {
        let item = meta.get_mut(id).expect("id from the meta");
        item.frame_checksums = (0..item.frame_info.len())
            .map(|i| u32::try_from(i * 0x9e37 + k).unwrap_or(0))
            .collect();
        item.metalayers.insert(
            "shape".into(),
            Value::Array(vec![Value::Int(240), Value::Int(320), Value::Int(3)]),
        );
        item.meta_data.push(
            [
                ("nan", Value::Float(f64::NAN)),
                ("f32ish", Value::Float(0.5)),
                ("big", Value::from(u64::MAX)),
                ("neg", Value::Int(i64::MIN)),
            ]
            .into_iter()
            .collect(),
        );
    }
    meta
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
