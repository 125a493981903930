//! Random metas survive JSON, msgpack, and JSON → msgpack → JSON, and the
//! JSON writer agrees with Python's `json` module byte for byte.

// Test code: a panic is a failure with a message, and sizes are small.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use gulp_format::{ChunkMeta, MetaFormat, read_meta};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

fn write(format: MetaFormat, meta: &ChunkMeta) -> Vec<u8> {
    format.serializer().to_vec(meta).unwrap()
}

proptest! {
    #![proptest_config(Config::with_cases(512))]

    #[test]
    fn json_round_trip(meta in common::json_meta()) {
        let bytes = write(MetaFormat::Json, &meta);
        prop_assert_eq!(MetaFormat::detect(&bytes), Some(MetaFormat::Json));
        let back = read_meta(&bytes).unwrap();
        prop_assert_eq!(&back, &meta);
        prop_assert_eq!(write(MetaFormat::Json, &back), bytes);
    }

    #[test]
    fn msgpack_round_trip(meta in common::msgpack_meta()) {
        let bytes = write(MetaFormat::Msgpack, &meta);
        prop_assert_eq!(MetaFormat::detect(&bytes), Some(MetaFormat::Msgpack));
        prop_assert_eq!(read_meta(&bytes).unwrap(), meta);
    }

    #[test]
    fn json_msgpack_json_is_lossless(meta in common::json_meta()) {
        let json = write(MetaFormat::Json, &meta);
        let packed = write(MetaFormat::Msgpack, &read_meta(&json).unwrap());
        let again = write(MetaFormat::Json, &read_meta(&packed).unwrap());
        prop_assert_eq!(again, json);
    }
}

/// Python's own `json.loads` + `json.dumps` must reproduce our bytes, and
/// `json.dumps` of what Python parsed must be what we wrote: the writer is
/// `json.dump` with default settings. Needs `python3` (any 3.x).
#[test]
fn json_writer_matches_python_json_dumps() {
    let mut runner = TestRunner::deterministic();
    let strategy = common::json_meta();
    let mut lines = Vec::new();
    for _ in 0..400 {
        let meta = strategy.new_tree(&mut runner).unwrap().current();
        lines.push(write(MetaFormat::Json, &meta));
    }
    let script = "import sys, json, collections\n\
                  for line in sys.stdin.buffer:\n\
                  \x20   obj = json.loads(line, object_pairs_hook=collections.OrderedDict)\n\
                  \x20   sys.stdout.write(json.dumps(obj) + '\\n')\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is needed for this test (the project's setup installs it)");
    let mut stdin = child.stdin.take().unwrap();
    let input: Vec<u8> = lines
        .iter()
        .flat_map(|l| l.iter().copied().chain([b'\n']))
        .collect();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    assert!(output.status.success(), "python3 failed");
    let python: Vec<&[u8]> = output
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(python.len(), lines.len());
    for (ours, theirs) in lines.iter().zip(python) {
        assert_eq!(
            String::from_utf8_lossy(ours),
            String::from_utf8_lossy(theirs)
        );
    }
}
