//! The JSON writer: byte-identical to Python's `json.dump(obj, fp)`.

use crate::layout::FrameInfo;
use crate::meta::ChunkMeta;
use crate::value::{Value, write_python_float};

pub(crate) fn write_chunk_meta(meta: &ChunkMeta, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (id, item)) in meta.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        write_str(id, out);
        out.extend_from_slice(b": {\"frame_info\": [");
        for (j, fi) in item.frame_info.iter().enumerate() {
            if j > 0 {
                out.extend_from_slice(b", ");
            }
            write_frame_info(fi, out);
        }
        out.extend_from_slice(b"], \"meta_data\": [");
        for (j, value) in item.meta_data.iter().enumerate() {
            if j > 0 {
                out.extend_from_slice(b", ");
            }
            write_value(value, out);
        }
        out.push(b']');
        // gulp's additions after GulpIO's two keys (format.md §8).
        for (key, value) in item.media_entries() {
            out.extend_from_slice(b", ");
            write_str(key, out);
            out.extend_from_slice(b": ");
            write_value(&value, out);
        }
        out.push(b'}');
    }
    out.push(b'}');
}

fn write_frame_info(fi: &FrameInfo, out: &mut Vec<u8>) {
    let mut buf = itoa::Buffer::new();
    out.push(b'[');
    out.extend_from_slice(buf.format(fi.loc).as_bytes());
    out.extend_from_slice(b", ");
    out.extend_from_slice(buf.format(fi.pad).as_bytes());
    out.extend_from_slice(b", ");
    out.extend_from_slice(buf.format(fi.length).as_bytes());
    out.push(b']');
}

pub(crate) fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes()),
        Value::BigInt(b) => out.extend_from_slice(b.as_str().as_bytes()),
        Value::Float(f) => write_python_float(out, *f),
        Value::String(s) => write_str(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_str(key, out);
                out.extend_from_slice(b": ");
                write_value(item, out);
            }
            out.push(b'}');
        }
    }
}

/// `json.encoder.py_encode_basestring_ascii`: printable ASCII as is, the
/// usual two-character escapes, everything else `\uXXXX` (lowercase hex,
/// surrogate pairs above U+FFFF).
fn write_str(s: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let push_u = |out: &mut Vec<u8>, unit: u16| {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from((unit >> shift) & 0xf)]);
        }
    };
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, ch) in s.char_indices() {
        let plain = matches!(ch, ' '..='~') && ch != '"' && ch != '\\';
        if plain {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        start = i + ch.len_utf8();
        match ch {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            _ => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    push_u(out, *unit);
                }
            }
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}
