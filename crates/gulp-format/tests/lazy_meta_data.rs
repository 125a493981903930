//! A msgpack meta's `meta_data` lists are checked completely at load and
//! decoded on first access: loading reports every problem the decoder would
//! meet, with the item id and byte offset; a list decodes to the values the
//! JSON of the same meta holds; a changed list is written from its values.

// Test code: a panic is a failure with a message, and sizes are small.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use gulp_format::{ChunkMeta, ErrorKind, MetaData, MetaFormat, Value, read_meta};
use gulp_test_support::fuzz_checks::format::check_msgpack;
use gulp_test_support::trailer::seal;

fn msgpack(meta: &ChunkMeta) -> Vec<u8> {
    MetaFormat::Msgpack.serializer().to_vec(meta).unwrap()
}

/// The JSON snippet of docs/format.md, with a second entry per item.
fn json_meta() -> ChunkMeta {
    let text = std::fs::read("tests/data/format-description-snippet.json").unwrap();
    let mut meta = read_meta(&text).unwrap();
    let ids: Vec<String> = meta.ids().map(str::to_owned).collect();
    for (k, id) in ids.iter().enumerate() {
        meta.get_mut(id).unwrap().meta_data.push(
            [
                ("k", Value::Int(k as i64)),
                ("name", Value::from("café 🎬")),
                ("big", Value::from(u64::MAX)),
                ("nan", Value::Float(f64::NAN)),
            ]
            .into_iter()
            .collect(),
        );
    }
    meta
}

#[test]
fn meta_data_is_send_sync_and_a_list() {
    fn send_sync<T: Send + Sync + Clone + Default + std::fmt::Debug + PartialEq>() {}
    send_sync::<MetaData>();
    let md: MetaData = vec![Value::Int(1)].into();
    assert_eq!(md, [Value::Int(1)]);
    assert_eq!(format!("{md:?}"), "[Int(1)]");
}

#[test]
fn a_loaded_item_is_decoded_on_first_access_only() {
    let json = json_meta();
    assert!(json.len() >= 2);
    let loaded = read_meta(&msgpack(&json)).unwrap();
    assert!(loaded.iter().all(|(_, item)| !item.meta_data.is_decoded()));

    let ids: Vec<&str> = loaded.ids().collect();
    for (k, id) in ids.iter().enumerate() {
        let item = loaded.get(id).unwrap();
        let want = json.get(id).unwrap();
        assert!(!item.meta_data.is_decoded());
        assert_eq!(item.first_meta_data(), want.first_meta_data());
        assert!(item.meta_data.is_decoded());
        assert_eq!(item.meta_data, want.meta_data);
        assert_eq!(item.meta_data.len(), 2);
        // The later items are still encoded.
        for later in &ids[k + 1..] {
            assert!(!loaded.get(later).unwrap().meta_data.is_decoded());
        }
    }
    assert_eq!(loaded, json);
}

#[test]
fn an_untouched_list_is_written_back_byte_for_byte() {
    let json = json_meta();
    let bytes = msgpack(&json);
    let loaded = read_meta(&bytes).unwrap();
    // Encoded lists are copied...
    assert_eq!(msgpack(&loaded), bytes);
    // ...and decoded but unchanged lists too.
    for (_, item) in loaded.iter() {
        let _ = item.meta_data.first();
    }
    assert_eq!(msgpack(&loaded), bytes);
    // And as JSON, the same bytes as the JSON reader's meta.
    let json_bytes = MetaFormat::Json.serializer().to_vec(&json).unwrap();
    assert_eq!(
        MetaFormat::Json.serializer().to_vec(&loaded).unwrap(),
        json_bytes
    );
}

#[test]
fn mutation_drops_the_encoded_bytes_and_is_written() {
    let json = json_meta();
    let ids: Vec<String> = json.ids().map(str::to_owned).collect();
    let (first, second) = (&ids[0], &ids[1]);

    let mut loaded = read_meta(&msgpack(&json)).unwrap();
    let mut want = json.clone();
    // push, through ChunkMeta::append as well.
    loaded
        .get_mut(first)
        .unwrap()
        .meta_data
        .push(Value::from("added"));
    want.get_mut(first)
        .unwrap()
        .meta_data
        .push(Value::from("added"));
    // DerefMut: change an element in place, before any read access.
    assert!(!loaded.get(second).unwrap().meta_data.is_decoded());
    loaded.get_mut(second).unwrap().meta_data[0] = Value::Null;
    want.get_mut(second).unwrap().meta_data[0] = Value::Null;
    assert!(loaded.get(second).unwrap().meta_data.is_decoded());

    assert_eq!(loaded, want);
    let written = msgpack(&loaded);
    // The same bytes as writing the eager meta with the same changes: the
    // changed lists were encoded from their values, the others copied.
    assert_eq!(written, msgpack(&want));
    let again = read_meta(&written).unwrap();
    assert_eq!(again, want);
    assert_eq!(
        again.get(first).unwrap().meta_data.last(),
        Some(&Value::from("added"))
    );
    assert_eq!(again.get(second).unwrap().meta_data[0], Value::Null);

    // as_mut_vec and replacing the whole list.
    let mut loaded = read_meta(&msgpack(&json)).unwrap();
    loaded
        .get_mut(first)
        .unwrap()
        .meta_data
        .as_mut_vec()
        .clear();
    loaded.get_mut(second).unwrap().meta_data = vec![Value::Int(7)].into();
    let again = read_meta(&msgpack(&loaded)).unwrap();
    assert!(again.get(first).unwrap().meta_data.is_empty());
    assert_eq!(again.get(second).unwrap().meta_data, [Value::Int(7)]);
}

#[test]
fn a_clone_decodes_on_its_own() {
    let loaded = read_meta(&msgpack(&json_meta())).unwrap();
    let item = loaded.get_index(0).unwrap().1;
    let copy = item.clone();
    assert_eq!(copy.meta_data.to_vec(), item.meta_data.to_vec());
    assert!(copy.meta_data.is_decoded() && item.meta_data.is_decoded());
    let item = loaded.get_index(1).unwrap().1;
    let copy = item.clone();
    let _ = copy.meta_data.first();
    assert!(copy.meta_data.is_decoded());
    assert!(!item.meta_data.is_decoded());
    assert_eq!(copy.meta_data.clone().into_vec(), item.meta_data.to_vec());
}

/// A sealed msgpack meta of one item `"a"` without frames whose meta section
/// is `item`, and the file offset where the meta section starts.
fn one_item(item: &[u8]) -> (Vec<u8>, usize) {
    let mut content = b"\x95\xa8gulpmeta\x01\x00\x01\x00".to_vec();
    content.extend_from_slice(b"\x91\x93\xa1a\x00\xce");
    content.extend_from_slice(&(item.len() as u32).to_be_bytes());
    content.extend_from_slice(b"\xc4\x00\xc0\xc6");
    content.extend_from_slice(&(item.len() as u32).to_be_bytes());
    let at = content.len();
    content.extend_from_slice(item);
    (seal(content), at)
}

/// `one_item` with the item `[meta_data, {}]`.
fn with_meta_data(meta_data: &[u8]) -> (Vec<u8>, usize) {
    let mut item = vec![0x92];
    item.extend_from_slice(meta_data);
    item.push(0x80);
    one_item(&item)
}

/// A msgpack fixstr.
fn fixstr(text: &str) -> Vec<u8> {
    assert!(text.len() < 32);
    let mut out = vec![0xa0 | text.len() as u8];
    out.extend_from_slice(text.as_bytes());
    out
}

/// A map16 of `keys`, each with the value nil.
fn map_of(keys: &[String]) -> Vec<u8> {
    let mut out = vec![0xde];
    out.extend_from_slice(&(keys.len() as u16).to_be_bytes());
    for key in keys {
        out.extend_from_slice(&fixstr(key));
        out.push(0xc0);
    }
    out
}

/// Asserts that `read_meta` rejects `file` at load with an error for item
/// `"a"` at file offset `offset` whose message contains `says`.
#[track_caller]
fn rejected(file: &[u8], offset: usize, says: &str) {
    let err = read_meta(file).expect_err("accepted at load");
    let msg = err.to_string();
    assert!(
        matches!(err.kind(), ErrorKind::Item { .. }),
        "not an item error: {msg}"
    );
    assert_eq!(err.id(), Some("a"), "{msg}");
    assert_eq!(err.offset(), Some(offset as u64), "{msg}");
    assert!(msg.contains(says), "{msg:?} does not say {says:?}");
    // Never a panic, and nothing else disagrees.
    check_msgpack(file);
}

#[test]
fn every_kind_of_bad_value_is_reported_at_load() {
    // Offsets in the meta section: 0 is the item's 92, 1 the list's marker.
    let cases: &[(&[u8], usize, &str)] = &[
        // A marker outside msgpack (c1) and one outside the meta model (bin).
        (b"\x91\xc1", 2, "not part of the meta model"),
        (b"\x91\xc4\x01\x00", 2, "not part of the meta model"),
        (b"\x92\x01\xc7\x00\x05", 3, "unsupported ext type 5"),
        // Lengths past the end of the item.
        (
            b"\x91\xdc\xff\xff",
            5,
            "declared length 65535 runs past the end",
        ),
        (b"\x91\xd9\x20a", 4, "declared length 32 runs past the end"),
        (b"\x91\xdf\x00\x01\x00\x00", 7, "runs past the end"),
        // Invalid UTF-8 in a string and in a key.
        (b"\x91\xa2\xc3\x28", 3, "invalid UTF-8"),
        (b"\x91\x81\xa2k\xff\x01", 5, "invalid UTF-8"),
        (b"\x91\x81\xd9\x02k\xff\x01", 6, "invalid UTF-8"),
        // A key that is not a string.
        (b"\x91\x81\x01\x01", 3, "expected a string"),
        (b"\x91\x81\xc0\x01", 3, "expected a string"),
        // A repeated key (reported at the map), also inside a list.
        (b"\x91\x82\xa1k\x01\xa1k\x02", 2, "repeated key"),
        (
            b"\x92\x01\x91\x83\xa1k\x01\xa1j\x80\xa1k\x02",
            4,
            "repeated key",
        ),
        // Ext: another type, a big integer that fits i64, one with leading
        // zeros, one that is not text.
        (b"\x91\xd4\x02\x00", 2, "unsupported ext type 2"),
        (b"\x91\xc7\x02\x0112", 2, "bad big integer"),
        (
            b"\x91\xc7\x15\x01012345678901234567890",
            2,
            "bad big integer",
        ),
        (b"\x91\xd5\x01\xff\xfe", 2, "bad big integer"),
        // meta_data must be a list.
        (b"\x81\xa1k\x01", 1, "meta_data is not a list"),
        (b"\xc0", 1, "meta_data is not a list"),
    ];
    for &(meta_data, at, says) in cases {
        let (file, section) = with_meta_data(meta_data);
        rejected(&file, section + at, says);
    }
    // A bad value inside a list that is not a list: the value's error first.
    let (file, section) = with_meta_data(b"\x81\xa1k\xc1");
    rejected(&file, section + 4, "not part of the meta model");
    // The metalayers are checked as before.
    let (file, section) = one_item(b"\x92\x90\x81\x01\x01");
    rejected(&file, section + 3, "expected a string");
    let (file, section) = one_item(b"\x92\x90\x90");
    rejected(&file, section + 2, "metalayers is not a map");
}

#[test]
fn repeated_keys_in_large_maps_are_reported_at_load() {
    let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    // Distinct keys load, whatever the size, and decode in order.
    for n in [0, 1, 15, 16, 17, 18, 40] {
        let mut md = vec![0x91];
        md.extend_from_slice(&map_of(&keys[..n]));
        let (file, _) = with_meta_data(&md);
        let meta = read_meta(&file).unwrap();
        let item = meta.get("a").unwrap();
        assert!(!item.meta_data.is_decoded() || n < 16, "{n}");
        let got: Vec<&str> = item.meta_data[0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            got,
            keys[..n].iter().map(String::as_str).collect::<Vec<_>>()
        );
        check_msgpack(&file);
    }
    // A repeat at each position, against each earlier key: across the switch
    // from comparing keys to a hash set at 16 keys.
    for n in [2, 16, 17, 18, 30] {
        for earlier in [0, (n - 1) / 2, n - 2] {
            let mut with_repeat: Vec<String> = keys[..n - 1].to_vec();
            with_repeat.push(keys[earlier].clone());
            let mut md = vec![0x91];
            md.extend_from_slice(&map_of(&with_repeat));
            let (file, section) = with_meta_data(&md);
            rejected(&file, section + 2, "repeated key");
        }
    }
    // Keys of nested maps are their own: an inner key equal to an outer one,
    // or to the key of an earlier sibling map, is no repeat.
    let mut outer = vec![0xde, 0x00, 20];
    for (i, key) in keys[..20].iter().enumerate() {
        outer.extend_from_slice(&fixstr(key));
        if i % 3 == 0 {
            outer.extend_from_slice(&map_of(&keys[..18]));
        } else {
            outer.push(0xc0);
        }
    }
    let mut md = vec![0x92];
    md.extend_from_slice(&outer);
    md.extend_from_slice(&map_of(&keys[..3]));
    let (file, _) = with_meta_data(&md);
    let meta = read_meta(&file).unwrap();
    let list = &meta.get("a").unwrap().meta_data;
    assert_eq!(list[0].as_object().unwrap().len(), 20);
    assert_eq!(list[0].get("k3").unwrap().as_object().unwrap().len(), 18);
    check_msgpack(&file);
}

#[test]
fn nesting_deeper_than_the_limit_is_reported_at_load() {
    // meta_data is level 1; 1024 levels are allowed. Nested lists, and
    // nested maps `{"k": {"k": ...}}` inside the list.
    for depth in [1023usize, 1024, 1025, 3000] {
        for maps in [false, true] {
            let (mut md, level_len) = if maps {
                let mut md = vec![0x91];
                for _ in 1..depth {
                    md.extend_from_slice(b"\x81\xa1k");
                }
                (md, 3)
            } else {
                (vec![0x91; depth], 1)
            };
            md.push(0xc0);
            let (file, section) = with_meta_data(&md);
            match read_meta(&file) {
                Ok(meta) => {
                    assert!(depth <= 1024, "{depth} levels accepted");
                    let item = meta.get("a").unwrap();
                    assert!(!item.meta_data.is_decoded());
                    let mut value = item.meta_data.first().unwrap();
                    // The meta_data list, then each list or map inside.
                    let mut levels = 1;
                    loop {
                        value = match value {
                            Value::Array(list) if list.len() == 1 => &list[0],
                            Value::Object(map) if map.len() == 1 => &map["k"],
                            _ => break,
                        };
                        levels += 1;
                    }
                    assert_eq!(levels, depth, "maps: {maps}");
                }
                Err(err) => {
                    assert!(depth > 1024, "{depth}: {err}");
                    assert_eq!(err.id(), Some("a"));
                    // At the marker of level 1025.
                    let at = section + 2 + 1023 * level_len;
                    assert_eq!(err.offset(), Some(at as u64), "{err}");
                    assert!(err.to_string().contains("nested deeper than 1024"), "{err}");
                }
            }
            check_msgpack(&file);
        }
    }
}

/// The msgpack bytes of `[value]`, as the writer makes them.
fn canonical(value: &Value) -> Vec<u8> {
    let mut meta = ChunkMeta::new();
    meta.append("a", value.clone(), []);
    let file = msgpack(&meta);
    let loaded = read_meta(&file).unwrap();
    assert!(!loaded.get("a").unwrap().meta_data.is_decoded());
    file
}

#[test]
fn other_writers_forms_are_decoded_at_load_and_written_canonically() {
    let big = Value::BigInt(gulp_format::BigInt::new("123456789012345678901").unwrap());
    let mut ext_u64 = b"\x91\xc7\x14\x01".to_vec();
    ext_u64.extend_from_slice(b"18446744073709551615");
    let mut ext16_big = b"\x91\xc8\x00\x15\x01".to_vec();
    ext16_big.extend_from_slice(b"123456789012345678901");
    let mut str16 = b"\x91\xda\x00\x03".to_vec();
    str16.extend_from_slice(b"abc");
    let cases: Vec<(Vec<u8>, Value)> = vec![
        (b"\x91\xcc\x05".to_vec(), Value::Int(5)),
        (b"\x91\xcd\x00\x80".to_vec(), Value::Int(128)),
        (b"\x91\xce\x00\x00\x01\x00".to_vec(), Value::Int(256)),
        (
            b"\x91\xcf\x00\x00\x00\x00\x00\x01\x00\x00".to_vec(),
            Value::Int(65536),
        ),
        (b"\x91\xd0\x05".to_vec(), Value::Int(5)),
        (b"\x91\xd0\xff".to_vec(), Value::Int(-1)),
        (b"\x91\xd1\xff\x80".to_vec(), Value::Int(-128)),
        (b"\x91\xd2\xff\xff\x80\x00".to_vec(), Value::Int(-32768)),
        (
            b"\x91\xd3\xff\xff\xff\xff\x80\x00\x00\x00".to_vec(),
            Value::Int(-2_147_483_648),
        ),
        (b"\x91\xca\x3f\xc0\x00\x00".to_vec(), Value::Float(1.5)),
        (b"\x91\xd9\x03abc".to_vec(), Value::from("abc")),
        (str16, Value::from("abc")),
        (
            b"\x91\xdc\x00\x01\x01".to_vec(),
            Value::Array(vec![Value::Int(1)]),
        ),
        (
            b"\x91\xde\x00\x01\xa1k\x01".to_vec(),
            [("k", Value::Int(1))].into_iter().collect(),
        ),
        (
            b"\x91\x81\xd9\x01k\x01".to_vec(),
            [("k", Value::Int(1))].into_iter().collect(),
        ),
        (ext_u64, Value::from(u64::MAX)),
        (ext16_big, big),
    ];
    for (meta_data, value) in cases {
        let (file, _) = with_meta_data(&meta_data);
        let meta = read_meta(&file).unwrap_or_else(|e| panic!("{meta_data:x?}: {e}"));
        let item = meta.get("a").unwrap();
        assert!(item.meta_data.is_decoded(), "{meta_data:x?} kept encoded");
        assert_eq!(
            item.meta_data,
            *std::slice::from_ref(&value),
            "{meta_data:x?}"
        );
        // Written back in the writer's own form.
        assert_eq!(msgpack(&meta), canonical(&value), "{meta_data:x?}");
        check_msgpack(&file);
    }
}

#[test]
fn the_writers_own_forms_stay_encoded_at_their_boundaries() {
    let values = [
        Value::Int(127),
        Value::Int(128),
        Value::Int(255),
        Value::Int(256),
        Value::Int(65535),
        Value::Int(65536),
        Value::Int(1 << 32),
        Value::Int(i64::MAX),
        Value::from(u64::MAX),
        Value::Int(-32),
        Value::Int(-33),
        Value::Int(-128),
        Value::Int(-129),
        Value::Int(-32768),
        Value::Int(-32769),
        Value::Int(i64::from(i32::MIN)),
        Value::Int(i64::from(i32::MIN) - 1),
        Value::Int(i64::MIN),
        Value::BigInt(gulp_format::BigInt::new("-9223372036854775809").unwrap()),
        Value::BigInt(gulp_format::BigInt::new(&"9".repeat(300)).unwrap()),
        Value::Float(-0.0),
        Value::Float(f64::NAN),
        Value::from("x".repeat(31)),
        Value::from("x".repeat(32)),
        Value::from("x".repeat(255)),
        Value::from("x".repeat(256)),
        Value::from("x".repeat(65536)),
        Value::Array(vec![Value::Null; 15]),
        Value::Array(vec![Value::Null; 16]),
        Value::Array(vec![Value::Null; 65536]),
        (0..16).map(|i| (format!("{i:032}"), Value::Null)).collect(),
        (0..70_000).map(|i| (format!("{i}"), Value::Null)).collect(),
    ];
    for value in &values {
        // canonical() asserts that the list loads still encoded.
        let file = canonical(value);
        let meta = read_meta(&file).unwrap();
        assert_eq!(
            meta.get("a").unwrap().meta_data,
            *std::slice::from_ref(value)
        );
        assert_eq!(msgpack(&meta), file);
    }
}
