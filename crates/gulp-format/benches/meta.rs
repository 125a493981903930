//! Loading (and writing) one chunk meta of 1,000 items × 30 frames in each
#![allow(missing_docs)] // criterion_group! generates undocumented items.
//! format. Run with `cargo bench -p gulp-format --bench meta`.

use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use gulp_format::{ChunkMeta, FrameInfo, MetaFormat, Value, read_meta};

/// A chunk like a Something-Something chunk: 1,000 videos of 30 frames, each
/// with a label, a template, placeholders and an integer id.
fn chunk(items: u64, frames: u64) -> ChunkMeta {
    let mut meta = ChunkMeta::new();
    let mut loc = 0;
    for i in 0..items {
        let id = (100_000 + i * 7).to_string();
        let meta_data: Value = [
            (
                "id",
                Value::Int(i64::try_from(100_000 + i * 7).unwrap_or(0)),
            ),
            (
                "label",
                Value::from(format!("Pushing something {i} from left to right")),
            ),
            (
                "template",
                Value::from("Pushing [something] from left to right"),
            ),
            (
                "placeholders",
                Value::Array(vec![Value::from("a cup"), Value::from("the table")]),
            ),
            ("fps", Value::Float(12.0)),
        ]
        .into_iter()
        .collect();
        let infos = (0..frames).map(|f| {
            let fi = FrameInfo::for_jpeg(loc, 7_000 + (i * 31 + f * 17) % 2_500);
            loc += fi.length;
            fi
        });
        let item = meta.append(&id, meta_data, infos);
        item.frame_checksums = (0..frames_u32(frames))
            .map(|f| f.wrapping_mul(0x9e37_79b9))
            .collect();
    }
    meta
}

fn frames_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn bench_meta(c: &mut Criterion) {
    let meta = chunk(1_000, 30);
    let mut group = c.benchmark_group("load chunk meta 1000x30");
    for format in [MetaFormat::Json, MetaFormat::Msgpack] {
        let bytes = format.serializer().to_vec(&meta).unwrap_or_default();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format.name(), |b| b.iter(|| read_meta(black_box(&bytes))));
        group.bench_function(format!("{} without drop", format.name()), |b| {
            b.iter_with_large_drop(|| read_meta(black_box(&bytes)))
        });
        // Loading, then reading every item's meta_data as gulpio2's reader
        // does: a msgpack meta decodes each list on this first access.
        group.bench_function(
            format!("{}, then every item's meta_data", format.name()),
            |b| {
                b.iter(|| {
                    let meta = read_meta(black_box(&bytes));
                    if let Ok(meta) = &meta {
                        for (_, item) in meta.iter() {
                            black_box(item.first_meta_data());
                        }
                    }
                    meta
                })
            },
        );
    }
    // The same chunk with `meta_data` reduced to null: the cost of ids,
    // frame_info and checksums alone.
    let mut bare = meta.clone();
    let ids: Vec<String> = bare.ids().map(str::to_owned).collect();
    for id in &ids {
        if let Some(item) = bare.get_mut(id) {
            item.meta_data = vec![Value::Null].into();
        }
    }
    for format in [MetaFormat::Json, MetaFormat::Msgpack] {
        let bytes = format.serializer().to_vec(&bare).unwrap_or_default();
        group.bench_function(format!("{} frame_info only", format.name()), |b| {
            b.iter(|| read_meta(black_box(&bytes)))
        });
    }
    group.finish();
    let mut group = c.benchmark_group("write chunk meta 1000x30");
    for format in [MetaFormat::Json, MetaFormat::Msgpack] {
        group.bench_function(format.name(), |b| {
            b.iter(|| format.serializer().to_vec(black_box(&meta)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_meta);
criterion_main!(benches);
