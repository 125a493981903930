//! The checks the meta fuzz targets (`json_meta`, `msgpack_meta`,
//! `msgpack_meta_sealed`) run on each input, and the input shaping of
//! `msgpack_meta_sealed`.

use gulp_format::{
    ChunkMeta, ItemMeta, JsonSerializer, MSGPACK_MAGIC, MetaData, MetaFormat, MetaIndex,
    read_index, read_item, read_meta,
};

use crate::trailer::seal;

/// `json_meta`: any bytes through the JSON parser. Whatever parses must write
/// back to JSON that parses to the same meta (and the same bytes again), and
/// must survive JSON → msgpack → meta unchanged. The single-value parser
/// (`JsonSerializer::parse_value`) gets the same bytes and the same round trip.
pub fn check_json(data: &[u8]) {
    let json = MetaFormat::Json.serializer();
    let parsed = json.read_meta(data);
    if MetaFormat::detect(data) == Some(MetaFormat::Json) {
        // Detection must route to the same parser.
        assert_eq!(read_meta(data).ok().as_ref(), parsed.as_ref().ok());
    }
    if MetaFormat::detect(data) != Some(MetaFormat::Msgpack) {
        check_index(data, parsed.as_ref().ok());
    }
    if let Ok(meta) = parsed {
        let written = json.to_vec(&meta).expect("the JSON writer never fails");
        let again = json
            .read_meta(&written)
            .unwrap_or_else(|e| panic!("our own JSON does not parse: {e}"));
        assert_eq!(again, meta, "JSON → meta → JSON → meta changed the meta");
        assert_eq!(
            json.to_vec(&again).expect("the JSON writer never fails"),
            written,
            "writing the re-parsed meta gave other bytes"
        );

        let msgpack = MetaFormat::Msgpack.serializer();
        let packed = msgpack
            .to_vec(&meta)
            .unwrap_or_else(|e| panic!("a JSON meta cannot be written as msgpack: {e}"));
        assert_eq!(MetaFormat::detect(&packed), Some(MetaFormat::Msgpack));
        let unpacked =
            read_meta(&packed).unwrap_or_else(|e| panic!("our own msgpack does not parse: {e}"));
        // Our own msgpack loads with every meta_data list still encoded, and
        // each decodes (on first access) to what the eager JSON parser built.
        assert!(
            unpacked
                .iter()
                .all(|(_, item)| !item.meta_data.is_decoded()),
            "a list in the writer's own form was decoded at load"
        );
        for ((id, lazy), (_, eager)) in unpacked.iter().zip(meta.iter()) {
            assert_eq!(
                lazy.meta_data.as_slice(),
                eager.meta_data.as_slice(),
                "id {id:?}: the lazily decoded meta_data differs"
            );
            assert!(lazy.meta_data.is_decoded());
        }
        assert_eq!(unpacked, meta, "JSON → msgpack → meta changed the meta");
    }

    if let Ok(value) = JsonSerializer::parse_value(data) {
        let text = JsonSerializer::value_to_string(&value);
        let again = JsonSerializer::parse_value(text.as_bytes())
            .unwrap_or_else(|e| panic!("our own JSON value does not parse: {e}"));
        assert_eq!(again, value, "value → JSON → value changed the value");
    }
}

/// `msgpack_meta` (and `msgpack_meta_sealed` after [`sealed`]): any bytes
/// through the msgpack parser. Whatever parses must decode every item's
/// `meta_data` (checked at load, decoded on first access) and write back to
/// msgpack that parses to the same meta, with canonical bytes that do not
/// change on a second write and do not depend on whether a list was kept
/// encoded; its JSON form must keep every id, `frame_info` and `meta_data`
/// (the msgpack-only checksums and metalayers aside).
pub fn check_msgpack(data: &[u8]) {
    let msgpack = MetaFormat::Msgpack.serializer();
    let parsed = msgpack.read_meta(data);
    if MetaFormat::detect(data) == Some(MetaFormat::Msgpack) {
        assert_eq!(read_meta(data).ok().as_ref(), parsed.as_ref().ok());
        check_index(data, parsed.as_ref().ok());
    }
    let Ok(meta) = parsed else { return };

    // Every meta_data list was checked at load, so decoding it now cannot
    // fail (debug builds assert so). A list left encoded is written back by
    // copying its bytes: they must be those the writer makes from the values,
    // i.e. the bytes written for a copy of the meta holding decoded lists.
    for (_, item) in meta.iter() {
        let _ = item.meta_data.first();
        assert!(item.meta_data.is_decoded());
    }
    let eager: ChunkMeta = meta
        .iter()
        .map(|(id, item)| {
            let mut item = item.clone();
            item.meta_data = MetaData::from(item.meta_data.to_vec());
            (id.to_owned(), item)
        })
        .collect();
    assert_eq!(eager, meta);
    let packed = msgpack
        .to_vec(&meta)
        .unwrap_or_else(|e| panic!("a parsed msgpack meta cannot be written back: {e}"));
    assert_eq!(
        msgpack.to_vec(&eager).expect("written once, so writable"),
        packed,
        "a meta_data list kept encoded was written with other bytes than its values"
    );
    let again = msgpack
        .read_meta(&packed)
        .unwrap_or_else(|e| panic!("our own msgpack does not parse: {e}"));
    assert!(
        again.iter().all(|(_, item)| !item.meta_data.is_decoded()),
        "a list in the writer's own form was decoded at load"
    );
    assert_eq!(
        again, meta,
        "msgpack → meta → msgpack → meta changed the meta"
    );
    assert_eq!(
        msgpack.to_vec(&again).expect("written once, so writable"),
        packed,
        "writing the re-parsed meta gave other bytes"
    );
    assert_eq!(read_meta(&packed).ok().as_ref(), Some(&meta));

    let json = MetaFormat::Json.serializer();
    let text = json.to_vec(&meta).expect("the JSON writer never fails");
    let from_json = json
        .read_meta(&text)
        .unwrap_or_else(|e| panic!("the JSON form of a msgpack meta does not parse: {e}"));
    let without_extras: ChunkMeta = meta
        .iter()
        .map(|(id, item)| {
            let item = ItemMeta {
                frame_info: item.frame_info.clone(),
                meta_data: item.meta_data.clone(),
                ..ItemMeta::default()
            };
            (id.to_owned(), item)
        })
        .collect();
    assert_eq!(
        from_json, without_extras,
        "msgpack → JSON → meta lost content"
    );
}

/// What opening a directory reads (`read_index`) must agree with the full
/// parse (`meta`, `None` if `read_meta` rejects `data`): whenever the full
/// parse succeeds, the same ids in the same order with the same frame
/// counts. A JSON meta must also be rejected by both or by neither; a msgpack
/// meta that the index accepts may still hold an item the full parse rejects
/// (its `meta_data` is decoded on first access only).
pub fn check_index(data: &[u8], meta: Option<&ChunkMeta>) {
    let index = read_index(data);
    match (meta, index) {
        (Some(meta), Ok(index)) => {
            let full: Vec<(&str, u64)> = meta
                .iter()
                .map(|(id, item)| (id, item.frame_info.len() as u64))
                .collect();
            let skim: Vec<(&str, u64)> = index.iter().collect();
            assert_eq!(skim, full, "read_index and read_meta disagree");
            assert_eq!(index.len(), meta.len());
            assert_eq!(index.n_frames(), meta.n_frames() as u64);
            check_items_alone(data, meta, &index);
        }
        (Some(_), Err(e)) => panic!("read_index rejects what read_meta accepts: {e}"),
        (None, Ok(index)) => assert_eq!(
            index.format(),
            MetaFormat::Msgpack,
            "read_index accepts a JSON meta that read_meta rejects"
        ),
        (None, Err(_)) => {}
    }
}

/// Every item of an accepted meta, parsed alone from the span
/// `read_index` found for it, is the item `read_meta` built (frame
/// checksums, which `read_item` leaves out, aside).
fn check_items_alone(data: &[u8], meta: &ChunkMeta, index: &MetaIndex) {
    let slice = |r: &std::ops::Range<u64>| &data[r.start as usize..r.end as usize];
    for (i, (id, item)) in meta.iter().enumerate() {
        let span = index.item_span(i).expect("a span for every item");
        let alone = read_item(
            index.format(),
            id,
            &span,
            slice(&span.meta),
            slice(&span.frames),
        )
        .unwrap_or_else(|e| panic!("read_item rejects item {id:?} that read_meta accepts: {e}"));
        let expected = ItemMeta {
            frame_checksums: Vec::new(),
            ..item.clone()
        };
        assert_eq!(
            alone, expected,
            "read_item and read_meta disagree on {id:?}"
        );
    }
}

/// `msgpack_meta_sealed`: turns fuzzer bytes into a msgpack meta file whose
/// fingerprint is right, so that mutations reach the section parsers behind it.
///
/// Input that starts with a header (an array marker then the magic) is taken
/// as the whole content. Anything else gets the header
/// `["gulpmeta", 1, flags, n_items, n_frames]` with `flags = b0 & 3`,
/// `n_items = b1` and `n_frames = b2` from its first three bytes, and the rest
/// of the input as the sections after it.
pub fn sealed(data: &[u8]) -> Vec<u8> {
    if has_header(data) {
        return seal(data.to_vec());
    }
    let (head, rest) = data.split_at(data.len().min(3));
    let byte = |i: usize| head.get(i).copied().unwrap_or(0);
    let mut content = Vec::with_capacity(data.len() + 16);
    content.push(0x95);
    content.extend_from_slice(MSGPACK_MAGIC);
    content.push(1);
    for n in [byte(0) & 3, byte(1), byte(2)] {
        if n >= 0x80 {
            content.push(0xcc);
        }
        content.push(n);
    }
    content.extend_from_slice(rest);
    seal(content)
}

/// Whether `data` starts like a msgpack meta header: an array marker, then
/// [`MSGPACK_MAGIC`].
pub fn has_header(data: &[u8]) -> bool {
    data.first().is_some_and(|b| b & 0xf0 == 0x90) && data[1..].starts_with(MSGPACK_MAGIC)
}
