//! The generated part of the bad-data corpus, `tests/data/bad/` at the
//! repository root (see its README.md): corrupt, truncated and hostile chunk
//! files, each with an expected error in `tests/data/bad/expectations.txt`.
//!
//! gulp-io's `bad_corpus` example writes these files; its `bad_data` test
//! checks that the committed ones are what [`corpus`] gives.

use gulp_format::{ChunkMeta, FrameInfo, MetaFormat, Value};

use crate::trailer::{seal, unseal};

/// A real 8×8 JPEG.
const JPEG: &[u8] = include_bytes!("../../gulp-io/tests/data/white-8x8.jpg");

/// Every file of the corpus: path relative to the corpus root, and bytes.
pub fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    meta_cases(&mut out);
    chunk_cases(&mut out);
    directory_cases(&mut out);
    decode_cases(&mut out);
    out
}

fn add(out: &mut Vec<(String, Vec<u8>)>, path: &str, bytes: impl Into<Vec<u8>>) {
    out.push((path.to_owned(), bytes.into()));
}

/// A msgpack uint in its 8-byte form.
fn u64_(v: u64) -> Vec<u8> {
    let mut b = vec![0xcf];
    b.extend_from_slice(&v.to_be_bytes());
    b
}

/// A msgpack header `["gulpmeta", version, flags, n_items, n_frames]`, the
/// numbers in their 8-byte form.
fn header(version: u64, flags: u64, n_items: u64, n_frames: u64) -> Vec<u8> {
    let mut b = vec![0x95, 0xa8];
    b.extend_from_slice(b"gulpmeta");
    for n in [version, flags, n_items, n_frames] {
        b.extend(u64_(n));
    }
    b
}

/// One-item sections: index `[[id, 1, 4]]`, a frame table of one frame
/// `[0, 0, 4]`, no checksums, and the item `[[nil], {}]` (4 bytes).
fn one_item_sections(id: &str) -> Vec<u8> {
    item_sections(id, &[0x92, 0x91, 0xc0, 0x80])
}

/// One-item sections as [`one_item_sections`], with `blob` as the item's
/// entry in the meta section (and its length as `meta_len`).
fn item_sections(id: &str, blob: &[u8]) -> Vec<u8> {
    let mut b = vec![0x91, 0x93, 0xa0 | id.len() as u8];
    b.extend_from_slice(id.as_bytes());
    b.extend_from_slice(&[0x01, blob.len() as u8]);
    b.extend_from_slice(&[0xc4, 24]);
    b.extend(frame_entry(0, 0, 4));
    b.push(0xc0);
    b.extend_from_slice(&[0xc4, blob.len() as u8]);
    b.extend_from_slice(blob);
    b
}

fn frame_entry(loc: u64, pad: u64, length: u64) -> Vec<u8> {
    [loc, pad, length]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

/// Items "a" (2 frames) and "b" (1 frame) of 5, 6 and 7 bytes (pads 3, 2,
/// 1): the data file (24 bytes) and its meta.
fn small_chunk() -> (Vec<u8>, ChunkMeta) {
    let frames: [&[u8]; 3] = [
        &[0xff, 0xd8, 1, 0xff, 0xd9],
        &[0xff, 0xd8, 1, 2, 0xff, 0xd9],
        &[0xff, 0xd8, 1, 2, 3, 0xff, 0xd9],
    ];
    let mut data = Vec::new();
    let mut meta = ChunkMeta::new();
    for (k, f) in frames.iter().enumerate() {
        let fi = FrameInfo::for_jpeg(data.len() as u64, f.len() as u64);
        data.extend_from_slice(f);
        data.resize(data.len() + fi.pad as usize, 0);
        let item = meta.append(["a", "a", "b"][k], Value::from("label"), [fi]);
        item.frame_checksums.push(crc32fast::hash(f));
    }
    (data, meta)
}

fn json(meta: &ChunkMeta) -> Vec<u8> {
    MetaFormat::Json.serializer().to_vec(meta).unwrap()
}

fn msgpack(meta: &ChunkMeta) -> Vec<u8> {
    MetaFormat::Msgpack.serializer().to_vec(meta).unwrap()
}

/// Single meta files, `meta/`: what `read_meta` must reject.
fn meta_cases(out: &mut Vec<(String, Vec<u8>)>) {
    let (_, meta) = small_chunk();
    let good_json = json(&meta);
    let good_msgpack = msgpack(&meta);
    let item = |frame_info: &str| {
        format!(r#"{{"a": {{"frame_info": {frame_info}, "meta_data": [{{"label": "x"}}]}}}}"#)
    };
    let mut m = |name: &str, bytes: Vec<u8>| add(out, &format!("meta/{name}"), bytes);

    // Not meta at all.
    m("empty.gmeta", Vec::new());
    m(
        "garbage.gmeta",
        (0u8..64).map(|i| i.wrapping_mul(151) ^ 0x5a).collect(),
    );
    m(
        "utf8_bom.gmeta",
        [b"\xef\xbb\xbf".as_slice(), b"{}"].concat(),
    );
    m("json_top_level_list.gmeta", b"[{}]".to_vec());
    m("only_whitespace.gmeta", b" \n\t ".to_vec());

    // JSON.
    m(
        "json_truncated.gmeta",
        good_json[..good_json.len() * 2 / 3].to_vec(),
    );
    m("json_nan_loc.gmeta", item("[[NaN, 0, 8]]").into());
    m(
        "json_infinity_length.gmeta",
        item("[[0, 0, Infinity]]").into(),
    );
    m("json_negative_loc.gmeta", item("[[-8, 0, 8]]").into());
    m("json_negative_pad.gmeta", item("[[0, -1, 8]]").into());
    m("json_float_length.gmeta", item("[[0, 0, 8.0]]").into());
    m(
        "json_length_2e64.gmeta",
        item("[[0, 0, 18446744073709551616]]").into(),
    );
    m("json_string_loc.gmeta", item(r#"[["0", 0, 8]]"#).into());
    m("json_two_numbers.gmeta", item("[[0, 8]]").into());
    m("json_four_numbers.gmeta", item("[[0, 0, 8, 0]]").into());
    m("json_frame_info_not_list.gmeta", item(r#""0,0,8""#).into());
    m("json_frame_info_null.gmeta", item("null").into());
    m(
        "json_meta_data_object.gmeta",
        br#"{"a": {"frame_info": [], "meta_data": {"label": "x"}}}"#.to_vec(),
    );
    m(
        "json_missing_frame_info.gmeta",
        br#"{"a": {"meta_data": []}}"#.to_vec(),
    );
    m(
        "json_extra_key.gmeta",
        br#"{"a": {"frame_info": [], "meta_data": [], "extra": 1}}"#.to_vec(),
    );
    // Frame times and sound (format.md §8).
    m(
        "json_frame_times_count.gmeta",
        br#"{"a": {"frame_info": [[0, 0, 8]], "meta_data": [{}], "frame_times": [0.0, 0.5]}}"#
            .to_vec(),
    );
    m(
        "json_frame_times_backwards.gmeta",
        br#"{"a": {"frame_info": [[0, 0, 8], [8, 0, 8]], "meta_data": [{}], "frame_times": [0.5, 0.5]}}"#
            .to_vec(),
    );
    m(
        "json_audio_length.gmeta",
        br#"{"a": {"frame_info": [], "meta_data": [{}], "audio": {"record": [0, 0, 8], "codec": "pcm_s16le", "sample_rate": 16000, "channels": 2, "samples": 4, "start": 0.0, "crc32": 0}}}"#
            .to_vec(),
    );
    m(
        "json_audio_codec.gmeta",
        br#"{"a": {"frame_info": [], "meta_data": [{}], "audio": {"record": [0, 0, 8], "codec": "opus", "sample_rate": 16000, "channels": 1, "samples": 4, "start": 0.0, "crc32": 0}}}"#
            .to_vec(),
    );
    m(
        "json_item_not_object.gmeta",
        br#"{"a": [[0, 0, 8]]}"#.to_vec(),
    );
    m(
        "json_id_not_string.gmeta",
        br#"{7: {"frame_info": [], "meta_data": []}}"#.to_vec(),
    );
    m(
        "json_trailing_garbage.gmeta",
        [good_json.as_slice(), b" }"].concat(),
    );
    m(
        "json_lone_surrogate.gmeta",
        br#"{"a\ud800": {"frame_info": [], "meta_data": []}}"#.to_vec(),
    );
    m(
        "json_invalid_utf8.gmeta",
        b"{\"a\xff\": {\"frame_info\": [], \"meta_data\": []}}".to_vec(),
    );
    m(
        "json_nested_1025.gmeta",
        format!(
            r#"{{"a": {{"frame_info": [], "meta_data": {}{}}}}}"#,
            "[".repeat(1025),
            "]".repeat(1025)
        )
        .into(),
    );

    // msgpack: framing.
    m("msgpack_magic_prefix.gmeta", b"\x95\xa8gulp".to_vec());
    m("msgpack_magic_only.gmeta", b"\x95\xa8gulpmeta".to_vec());
    m(
        "msgpack_truncated.gmeta",
        good_msgpack[..good_msgpack.len() / 2].to_vec(),
    );
    m("msgpack_no_trailer.gmeta", unseal(&good_msgpack).to_vec());
    m(
        "msgpack_bytes_appended.gmeta",
        [good_msgpack.as_slice(), &[0, 0, 0, 0]].concat(),
    );
    let mut flipped = good_msgpack.clone();
    flipped[40] ^= 0x01;
    m("msgpack_bad_fingerprint.gmeta", flipped);
    m(
        "msgpack_version_2.gmeta",
        seal([header(2, 0, 0, 0), vec![0x90, 0xc4, 0, 0xc0, 0xc4, 0]].concat()),
    );
    m(
        "msgpack_version_0.gmeta",
        seal([header(0, 0, 0, 0), vec![0x90, 0xc4, 0, 0xc0, 0xc4, 0]].concat()),
    );
    m(
        "msgpack_unknown_flags.gmeta",
        seal([header(1, 0x80, 0, 0), vec![0x90, 0xc4, 0, 0xc0, 0xc4, 0]].concat()),
    );
    m(
        "msgpack_header_4_fields.gmeta",
        seal(
            [
                b"\x94\xa8gulpmeta".to_vec(),
                vec![1, 0, 0, 0x90, 0xc4, 0, 0xc0, 0xc4, 0],
            ]
            .concat(),
        ),
    );
    m(
        "msgpack_header_not_array.gmeta",
        seal(b"\x85\xa8gulpmeta\x01\x00\x00\x00".to_vec()),
    );

    // msgpack: huge declared sizes in a tiny file (all with a valid trailer).
    m(
        "msgpack_n_items_2e32.gmeta",
        seal([header(1, 0, 1 << 32, 0), vec![0x90, 0xc4, 0, 0xc0, 0xc4, 0]].concat()),
    );
    m(
        "msgpack_index_len_2e32.gmeta",
        seal(
            [
                header(1, 0, 0xffff_ffff, 0),
                vec![0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0],
            ]
            .concat(),
        ),
    );
    m(
        "msgpack_frame_table_len_2e32.gmeta",
        seal(
            [
                header(1, 0, 0, 0),
                vec![0x90, 0xc6, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc4, 0],
            ]
            .concat(),
        ),
    );
    m(
        "msgpack_id_len_2e32.gmeta",
        seal(
            [
                header(1, 0, 1, 1),
                vec![0x91, 0x93, 0xdb, 0xff, 0xff, 0xff, 0xff, b'a'],
            ]
            .concat(),
        ),
    );
    let mut s = vec![0x91, 0x93, 0xa1, b'a'];
    s.extend(u64_(1 << 62));
    s.push(4);
    s.extend_from_slice(&[0xc4, 0, 0xc0, 0xc4, 0]);
    m(
        "msgpack_n_frames_2e62.gmeta",
        seal([header(1, 0, 1, 1 << 62), s].concat()),
    );
    let mut s = vec![0x91, 0x93, 0xa1, b'a', 1];
    s.extend(u64_(1 << 40));
    s.extend_from_slice(&[0xc4, 24]);
    s.extend(frame_entry(0, 0, 4));
    s.extend_from_slice(&[0xc0, 0xc4, 4, 0x92, 0x91, 0xc0, 0x80]);
    m(
        "msgpack_meta_len_2e40.gmeta",
        seal([header(1, 0, 1, 1), s].concat()),
    );
    let mut s = vec![0x91, 0x93, 0xa1, b'a', 0, 9];
    s.extend_from_slice(&[0xc4, 0, 0xc0, 0xc4, 9, 0x92, 0xdc, 0xff, 0xff, 0xc0, 0xc0]);
    s.extend_from_slice(&[0xc0, 0xc0, 0x80]);
    m(
        "msgpack_meta_data_len_65535.gmeta",
        seal([header(1, 0, 1, 0), s].concat()),
    );

    // msgpack: inconsistent sections.
    m(
        "msgpack_frame_count_mismatch.gmeta",
        seal([header(1, 0, 1, 5), one_item_sections("a")].concat()),
    );
    let mut s = one_item_sections("a");
    s[7] = 23; // frame table one byte short
    s.remove(8);
    m(
        "msgpack_frame_table_short.gmeta",
        seal([header(1, 0, 1, 1), s].concat()),
    );
    let mut s = vec![0x92];
    for _ in 0..2 {
        s.extend_from_slice(&[0x93, 0xa1, b'a', 0, 4]);
    }
    s.extend_from_slice(&[0xc4, 0, 0xc0, 0xc4, 8]);
    s.extend_from_slice(&[0x92, 0x91, 0xc0, 0x80, 0x92, 0x91, 0xc0, 0x80]);
    m(
        "msgpack_duplicate_id.gmeta",
        seal([header(1, 0, 2, 0), s].concat()),
    );
    m(
        "msgpack_bin_in_meta_data.gmeta",
        seal(
            [
                header(1, 0, 1, 1),
                item_sections("a", &[0x92, 0x91, 0xc4, 0, 0x80]),
            ]
            .concat(),
        ),
    );
    m(
        "msgpack_unknown_ext.gmeta",
        seal(
            [
                header(1, 0, 1, 1),
                item_sections("a", &[0x92, 0x91, 0xd4, 5, 0, 0x80]),
            ]
            .concat(),
        ),
    );
    let mut s = one_item_sections("a");
    s[4] = 0xa1; // n_frames is a string
    s.insert(5, b'1');
    m(
        "msgpack_n_frames_string.gmeta",
        seal([header(1, 0, 1, 1), s].concat()),
    );
    m(
        "msgpack_metalayers_list.gmeta",
        seal(
            [
                header(1, 0, 1, 1),
                item_sections("a", &[0x92, 0x91, 0xc0, 0x90]),
            ]
            .concat(),
        ),
    );
    let mut s = one_item_sections("a");
    s.extend_from_slice(&[0xc0]); // a byte between the sections and the trailer
    m(
        "msgpack_extra_section_bytes.gmeta",
        seal([header(1, 0, 1, 1), s].concat()),
    );
    let mut s = one_item_sections("a");
    s[2] = 0xa1;
    s[3] = 0xff; // id is not UTF-8
    m(
        "msgpack_id_invalid_utf8.gmeta",
        seal([header(1, 0, 1, 1), s].concat()),
    );
    let mut nested = vec![0x91, 0x93, 0xa1, b'a', 0];
    let depth = 1025;
    let blob_len = 1 + depth + 1 + 1;
    nested.extend(u64_(blob_len as u64));
    nested.extend_from_slice(&[0xc4, 0, 0xc0, 0xc5]);
    nested.extend_from_slice(&(blob_len as u16).to_be_bytes());
    nested.push(0x92);
    nested.extend(std::iter::repeat_n(0x91, depth));
    nested.push(0xc0);
    nested.push(0x80);
    m(
        "msgpack_nested_1025.gmeta",
        seal([header(1, 0, 1, 0), nested].concat()),
    );
}

/// Chunk pairs, `chunk/<case>/`: the meta parses, the records do not fit.
fn chunk_cases(out: &mut Vec<(String, Vec<u8>)>) {
    let (data, meta) = small_chunk();
    let mut pair = |name: &str, data: &[u8], meta: Vec<u8>| {
        add(out, &format!("chunk/{name}/data_0.gulp"), data);
        add(out, &format!("chunk/{name}/meta_0.gmeta"), meta);
    };
    let with_frame = |fi: FrameInfo| {
        let mut m = meta.clone();
        m.get_mut("a").unwrap().frame_info[1] = fi;
        m
    };
    let bad = |loc, pad, length| with_frame(FrameInfo { loc, pad, length });

    pair("offset_past_eof", &data, json(&bad(4000, 2, 8)));
    pair("offset_past_eof_msgpack", &data, msgpack(&bad(4000, 2, 8)));
    pair("record_straddles_eof", &data, json(&bad(20, 0, 8)));
    pair("length_not_multiple_of_4", &data, json(&bad(8, 2, 7)));
    pair("pad_over_3", &data, json(&bad(8, 4, 8)));
    pair("pad_greater_than_length", &data, json(&bad(8, 3, 0)));
    pair("loc_overflow", &data, json(&bad(u64::MAX - 3, 0, 8)));
    pair("length_2e63", &data, json(&bad(8, 0, 1 << 63)));
    pair("length_2e63_msgpack", &data, msgpack(&bad(8, 0, 1 << 63)));
    pair("data_truncated", &data[..17], json(&meta));
    pair("data_truncated_msgpack", &data[..17], msgpack(&meta));
    pair("data_empty", &[], json(&meta));
    let mut nonzero_pad = data.clone();
    nonzero_pad[5] = 0xff;
    pair("nonzero_pad_bytes", &nonzero_pad, json(&meta));
    pair("meta_truncated", &data, json(&meta)[..30].to_vec());
    let mut packed = msgpack(&meta);
    let n = packed.len();
    packed[n - 1] ^= 0xff;
    pair("meta_bad_fingerprint", &data, packed);
    pair("meta_empty", &data, Vec::new());
    pair(
        "meta_nan_frame_info",
        &data,
        br#"{"a": {"frame_info": [[0, NaN, 8]], "meta_data": ["A"]}}"#.to_vec(),
    );
}

/// Directories of several chunks, `directory/<case>/`.
fn directory_cases(out: &mut Vec<(String, Vec<u8>)>) {
    let (data, meta) = small_chunk();
    let mut file = |case: &str, name: &str, bytes: Vec<u8>| {
        add(out, &format!("directory/{case}/{name}"), bytes);
    };
    // The same id "b" in chunks 0 and 1.
    file("duplicate_ids", "data_0.gulp", data.clone());
    file("duplicate_ids", "meta_0.gmeta", json(&meta));
    let mut b_only = ChunkMeta::new();
    b_only.append("b", Value::Null, [FrameInfo::for_jpeg(0, 4)]);
    file("duplicate_ids", "data_1.gulp", vec![0xff, 0xd8, 0xff, 0xd9]);
    file("duplicate_ids", "meta_1.gmeta", msgpack(&b_only));
    // Chunk 0 is fine, chunk 3's meta is garbage: the error names chunk 3.
    file("second_chunk_corrupt", "data_0.gulp", data.clone());
    file("second_chunk_corrupt", "meta_0.gmeta", json(&meta));
    file("second_chunk_corrupt", "data_3.gulp", vec![0; 8]);
    file(
        "second_chunk_corrupt",
        "meta_3.gmeta",
        b"\x00\x00garbage".to_vec(),
    );
    // Chunk 10's meta is a 0-byte file, as gulpio2 leaves after a crash.
    file("empty_meta_beside_good_chunk", "data_2.gulp", data.clone());
    file("empty_meta_beside_good_chunk", "meta_2.gmeta", json(&meta));
    file("empty_meta_beside_good_chunk", "data_10.gulp", Vec::new());
    file("empty_meta_beside_good_chunk", "meta_10.gmeta", Vec::new());
    // Orphans and a temporary file: warnings, not errors.
    file("orphans", "data_0.gulp", data.clone());
    file("orphans", "meta_0.gmeta", json(&meta));
    file("orphans", "data_1.gulp", data.clone());
    file("orphans", "meta_2.gmeta", json(&ChunkMeta::new()));
    file("orphans", ".gulp-tmp.data_3.gulp", data);
}

/// Chunk pairs whose records read but do not decode, `decode/<case>/`.
fn decode_cases(out: &mut Vec<(String, Vec<u8>)>) {
    let mut pair = |name: &str, frames: &[&[u8]]| {
        let mut data = Vec::new();
        let mut meta = ChunkMeta::new();
        for f in frames {
            let fi = FrameInfo::for_jpeg(data.len() as u64, f.len() as u64);
            data.extend_from_slice(f);
            data.resize(data.len() + fi.pad as usize, 0);
            meta.append("clip", Value::from("x"), [fi]);
        }
        add(out, &format!("decode/{name}/data_0.gulp"), data);
        add(out, &format!("decode/{name}/meta_0.gmeta"), json(&meta));
    };
    let garbage: Vec<u8> = (0u8..200).map(|i| i.wrapping_mul(73) | 1).collect();
    pair("jpeg_without_markers", &[JPEG, &garbage]);
    pair("jpeg_soi_eoi_only", &[JPEG, &[0xff, 0xd8, 0xff, 0xd9]]);
    pair("jpeg_header_only", &[JPEG, &JPEG[..JPEG.len() / 4]]);
    pair("jpeg_empty_frame", &[JPEG, &[]]);
}
