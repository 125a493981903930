//! Proptest strategies for random chunk metas.

use gulp_format::{BigInt, ChunkMeta, FrameInfo, ItemMeta, Map, Value};
use proptest::prelude::*;

pub fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        Just(1e16),
        Just(1e-5),
        (-1000i32..1000).prop_map(|i| f64::from(i) / 8.0),
    ]
}

pub fn big_int() -> impl Strategy<Value = BigInt> {
    ("-?[1-9][0-9]{19,40}").prop_filter_map("outside i64", |s| BigInt::new(&s))
}

pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_]{0,8}",
        any::<String>(),
        "[\\x00-\\x1f\"\\\\/\u{7f}é日🎬]{0,6}",
    ]
}

pub fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        big_int().prop_map(Value::BigInt),
        float().prop_map(Value::Float),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map>())),
        ]
    })
}

pub fn frame_info() -> impl Strategy<Value = FrameInfo> {
    prop_oneof![
        (0u64..1 << 40, 0u64..4, 0u64..1 << 20).prop_map(|(loc, pad, length)| FrameInfo {
            loc,
            pad,
            length
        }),
        any::<(u64, u64, u64)>().prop_map(|(loc, pad, length)| FrameInfo { loc, pad, length }),
    ]
}

fn item(checksums: bool, metalayers: bool) -> impl Strategy<Value = ItemMeta> {
    (
        prop::collection::vec(frame_info(), 0..8),
        prop::collection::vec(value(), 0..3),
        prop::collection::vec((text(), value()), 0..3),
    )
        .prop_flat_map(move |(frame_info, meta_data, layers)| {
            let n = frame_info.len();
            let crcs = if checksums {
                prop::collection::vec(any::<u32>(), n..=n).boxed()
            } else {
                Just(Vec::new()).boxed()
            };
            crcs.prop_map(move |frame_checksums| ItemMeta {
                frame_info: frame_info.clone(),
                meta_data: meta_data.clone().into(),
                frame_checksums,
                metalayers: if metalayers {
                    layers.iter().cloned().collect()
                } else {
                    Map::default()
                },
            })
        })
}

/// A chunk meta with what JSON can hold (no checksums, no metalayers).
pub fn json_meta() -> impl Strategy<Value = ChunkMeta> {
    prop::collection::vec((text(), item(false, false)), 0..8)
        .prop_map(|items| items.into_iter().collect())
}

/// A chunk meta using every msgpack feature.
pub fn msgpack_meta() -> impl Strategy<Value = ChunkMeta> {
    any::<bool>().prop_flat_map(|checksums| {
        prop::collection::vec((text(), item(checksums, true)), 0..8)
            .prop_map(|items| items.into_iter().collect())
    })
}
