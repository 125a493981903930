//! Proptest strategies for random chunk metas.

use gulp_format::{
    AUDIO_KEY, Audio, AudioCodec, AudioTrack, BigInt, ChunkMeta, FRAME_TIMES_KEY, FrameInfo,
    FrameTimes, ItemMeta, MAX_CHANNELS, MAX_SAMPLE_RATE, Map, Value,
};
use proptest::prelude::*;

pub(crate) fn float() -> impl Strategy<Value = f64> {
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

pub(crate) fn big_int() -> impl Strategy<Value = BigInt> {
    ("-?[1-9][0-9]{19,40}").prop_filter_map("outside i64", |s| BigInt::new(&s))
}

pub(crate) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_]{0,8}",
        any::<String>(),
        "[\\x00-\\x1f\"\\\\/\u{7f}é日🎬]{0,6}",
    ]
}

pub(crate) fn value() -> impl Strategy<Value = Value> {
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

pub(crate) fn frame_info() -> impl Strategy<Value = FrameInfo> {
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
            (crcs, frame_times(n), audio()).prop_map(
                move |(frame_checksums, frame_times, audio)| {
                    ItemMeta {
                        frame_info: frame_info.clone(),
                        meta_data: meta_data.clone().into(),
                        frame_checksums,
                        metalayers: if metalayers {
                            // The two names the format keeps for times and sound.
                            layers
                                .iter()
                                .filter(|(k, _)| k != FRAME_TIMES_KEY && k != AUDIO_KEY)
                                .cloned()
                                .collect()
                        } else {
                            Map::default()
                        },
                        frame_times,
                        audio,
                    }
                },
            )
        })
}

/// Frame times for `n` frames: none, a grid, or an increasing list.
fn frame_times(n: usize) -> impl Strategy<Value = Option<FrameTimes>> {
    prop_oneof![
        Just(None),
        (-1e6f64..1e6, 1e-6f64..10.0)
            .prop_map(|(start, step)| Some(FrameTimes::Grid { start, step })),
        (-1e3f64..1e3, prop::collection::vec(1e-6f64..5.0, n..=n)).prop_map(|(first, gaps)| {
            let mut t = first;
            Some(FrameTimes::List(
                gaps.iter()
                    .map(|g| {
                        let now = t;
                        t += g;
                        now
                    })
                    .collect(),
            ))
        }),
    ]
}

/// No sound, none found, or a track whose record holds its samples.
fn audio() -> impl Strategy<Value = Option<Audio>> {
    prop_oneof![
        Just(None),
        Just(Some(Audio::NoTrack)),
        (
            0u64..1 << 40,
            1u32..=MAX_SAMPLE_RATE,
            1u16..=MAX_CHANNELS,
            0u64..1 << 24,
            -10.0f64..1e5,
            any::<u32>()
        )
            .prop_map(|(loc, sample_rate, channels, samples, start, checksum)| {
                let bytes = samples * u64::from(channels) * 2;
                Some(Audio::Track(AudioTrack {
                    record: FrameInfo::for_jpeg(loc * 4, bytes),
                    codec: AudioCodec::PcmS16le,
                    sample_rate,
                    channels,
                    samples,
                    start,
                    checksum,
                }))
            }),
    ]
}

/// A chunk meta with what JSON can hold (no checksums, no metalayers).
pub(crate) fn json_meta() -> impl Strategy<Value = ChunkMeta> {
    prop::collection::vec((text(), item(false, false)), 0..8)
        .prop_map(|items| items.into_iter().collect())
}

/// A chunk meta using every msgpack feature.
pub(crate) fn msgpack_meta() -> impl Strategy<Value = ChunkMeta> {
    any::<bool>().prop_flat_map(|checksums| {
        prop::collection::vec((text(), item(checksums, true)), 0..8)
            .prop_map(|items| items.into_iter().collect())
    })
}
