//! Gulps folders of JPEG frames (one folder per clip) into a gulp directory,
//! storing the JPEG bytes as they are, then opens it and decodes every frame.
//!
//! `cargo run --release -p gulp-io --example sample -- <frames_dir> <out_dir>`

use std::path::{Path, PathBuf};
use std::time::Instant;

use gulp_codec::{ZuneDecoder, decode_batch};
use gulp_format::{MetaFormat, Value};
use gulp_io::{ChunkWriter, GulpDirectory, Selection};

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    Ok(entries)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [frames_dir, out_dir] = args.as_slice() else {
        return Err("usage: sample <frames_dir> <out_dir>".into());
    };
    std::fs::create_dir_all(out_dir)?;
    let clips = sorted_entries(Path::new(frames_dir))?;
    let started = Instant::now();
    for (chunk, group) in clips.chunks(2).enumerate() {
        let format = if chunk % 2 == 0 {
            MetaFormat::Json
        } else {
            MetaFormat::Msgpack
        };
        let mut writer = ChunkWriter::builder()
            .meta_format(format)
            .create(out_dir, chunk as u64)?;
        for clip in group {
            let id = clip
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or("clip folder name is not UTF-8")?;
            let frames = sorted_entries(clip)?
                .iter()
                .map(std::fs::read)
                .collect::<Result<Vec<Vec<u8>>, _>>()?;
            let meta: Value = [
                ("label", Value::from(id)),
                ("frames", Value::from(frames.len() as u64)),
            ]
            .into_iter()
            .collect();
            writer.append(id, meta, &frames)?;
        }
        let summary = writer.finish()?;
        println!(
            "chunk {} ({format} meta): {} items, {} frames, {} bytes",
            summary.chunk, summary.items, summary.frames, summary.bytes
        );
    }
    println!("written in {:.3}s", started.elapsed().as_secs_f64());

    let gulp = GulpDirectory::open(out_dir)?;
    let decoder = ZuneDecoder::default();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut decoded = 0;
    for id in gulp.ids() {
        let frames = gulp.frames(id, &Selection::All)?;
        for image in decode_batch(&frames, &decoder, threads) {
            let image = image?;
            if decoded == 0 {
                println!("first frame: {:?}", image.shape());
            }
            decoded += 1;
        }
    }
    println!(
        "read back {} items, decoded {decoded} of {} frames",
        gulp.len(),
        gulp.n_frames()
    );
    Ok(())
}
