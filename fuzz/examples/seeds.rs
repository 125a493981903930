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
//!   their checks in `crates/gulp-io/tests/support/fuzz_checks.rs`.
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

    println!("seeds written under {}", out.display());
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
