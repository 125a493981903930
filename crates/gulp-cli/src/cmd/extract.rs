//! `gulp extract`: an item's frames (and sound) as files.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gulp_codec::{Image, JpegDecoder, decode_batch};
use gulp_format::Audio;
use gulp_io::audio::{wav_data_len, wav_header};
use gulp_io::{ChunkReader, Selection};

use crate::Outcome;
use crate::cli::{ExtractArgs, ImageFormatArg};

pub(super) fn run(args: &ExtractArgs) -> Result<Outcome> {
    // A bad selection is reported before anything is opened or written.
    let selection = Selection::parse(&super::selection(&args.select, &args.frames))?;
    let gulp = super::open_dir(&args.dir)?;
    let threads = super::threads(None);
    let mut out = super::stdout();
    for id in &args.ids {
        let reader = gulp.reader_for(id)?;
        let indices = super::frame_indices(reader, id, &selection)?;
        let frames = indices
            .iter()
            .map(|&k| reader.frame(id, k))
            .collect::<gulp_io::Result<Vec<_>>>()?;
        let item_dir = args.out.join(file_name_for_id(id));
        std::fs::create_dir_all(&item_dir)
            .with_context(|| format!("creating {}", item_dir.display()))?;
        match args.decode {
            None => {
                for (k, jpeg) in indices.iter().zip(&frames) {
                    let path = item_dir.join(format!("{k:05}.jpg"));
                    std::fs::write(&path, jpeg)
                        .with_context(|| format!("writing {}", path.display()))?;
                }
            }
            Some(ImageFormatArg::Png) => {
                let decoder = JpegDecoder::default();
                let images = decode_batch(&frames, &decoder, threads);
                for (k, image) in indices.iter().zip(images) {
                    let image = image.with_context(|| {
                        format!("id {id:?} frame {k} in {}", reader.data_path().display())
                    })?;
                    write_png(&item_dir.join(format!("{k:05}.png")), &image)?;
                }
            }
        }
        let sound = if args.audio {
            write_audio(reader, id, &item_dir)?
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}: {} frames of id {id:?}{sound}",
            item_dir.display(),
            frames.len()
        )?;
    }
    out.flush()?;
    Ok(Outcome::Success)
}

/// The file name of an item's sound in its folder (frames are numbered,
/// so it meets none of them).
const AUDIO_FILE: &str = "audio.wav";

/// Writes `id`'s sound to `item_dir/audio.wav`, and says what was written
/// (or why nothing was) for the item's line.
fn write_audio(reader: &ChunkReader, id: &str, item_dir: &Path) -> Result<String> {
    let track = match &reader.item(id)?.audio {
        Some(Audio::Track(track)) => track,
        Some(Audio::NoTrack) => return Ok("; no sound (its video had none)".into()),
        None => return Ok("; no sound (ingested without --audio)".into()),
    };
    let pcm = reader.audio(id, track)?;
    let path = item_dir.join(AUDIO_FILE);
    let data = &pcm[..wav_data_len(pcm.len() as u64) as usize];
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&path)?;
        file.write_all(&wav_header(
            pcm.len() as u64,
            track.sample_rate,
            track.channels,
        ))?;
        file.write_all(data)
    };
    write().with_context(|| format!("writing {}", path.display()))?;
    let cut = if data.len() < pcm.len() {
        " (cut to the 4 GiB a WAV file can hold)"
    } else {
        ""
    };
    Ok(format!(
        "; sound in {} ({} Hz, {} channel{}, {:.3} s from {:.3} s{cut})",
        path.display(),
        track.sample_rate,
        track.channels,
        if track.channels == 1 { "" } else { "s" },
        track.duration(),
        track.start
    ))
}

fn write_png(path: &Path, image: &Image) -> Result<()> {
    let color = match image.channels {
        1 => image::ExtendedColorType::L8,
        _ => image::ExtendedColorType::Rgb8,
    };
    let width = u32::try_from(image.width).context("image too wide for PNG")?;
    let height = u32::try_from(image.height).context("image too high for PNG")?;
    image::save_buffer_with_format(
        path,
        &image.pixels,
        width,
        height,
        color,
        image::ImageFormat::Png,
    )
    .with_context(|| format!("writing {}", path.display()))
}

/// The directory name for an id: the id itself, with the characters a file
/// name cannot hold (and `%`, the escape) written as `%XX`; `.`, `..` and the
/// empty id are escaped whole.
fn file_name_for_id(id: &str) -> PathBuf {
    let escape_all = matches!(id, "" | "." | "..");
    let mut name = String::with_capacity(id.len());
    if id.is_empty() {
        name.push('%');
    }
    for c in id.chars() {
        if escape_all || matches!(c, '/' | '\\' | '\0' | '%') {
            // Each of these is ASCII, so one byte.
            name.push_str(&format!("%{:02X}", u32::from(c)));
        } else {
            name.push(c);
        }
    }
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::file_name_for_id;

    #[test]
    fn ids_become_safe_file_names() {
        for (id, name) in [
            ("702766", "702766"),
            ("a/b", "a%2Fb"),
            ("50%", "50%25"),
            ("..", "%2E%2E"),
            (".", "%2E"),
            ("", "%"),
            ("café", "café"),
        ] {
            assert_eq!(file_name_for_id(id).to_str(), Some(name), "{id:?}");
        }
    }
}
