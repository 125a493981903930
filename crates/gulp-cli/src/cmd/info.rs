//! `gulp info`: a summary of a gulp directory.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result};
use gulp_format::Audio;
use gulp_io::{LABEL_FILE, LabelIndex};
use serde::Serialize;

use crate::Outcome;
use crate::cli::InfoArgs;

#[derive(Debug, Serialize)]
struct Info {
    dir: String,
    chunks: usize,
    items: usize,
    frames: usize,
    /// Total size of the data files.
    bytes: u64,
    /// Meta format name -> number of chunks.
    meta_formats: BTreeMap<&'static str, usize>,
    /// JPEG bytes per frame (record length less pad).
    frame_bytes: Option<Sizes>,
    labels: Option<Labels>,
    /// The size of the index file the directory was read from, if any.
    index: Option<u64>,
    warnings: Vec<String>,
    /// The items' sound; `None` when read from an index file, which holds
    /// no sound (the metas are not parsed then).
    audio: Option<Sound>,
    /// Items with frame times (`docs/format.md` §8.1); `None` as `audio`.
    frame_times: Option<usize>,
}

/// What the metas say of sound (`docs/format.md` §8.2).
#[derive(Debug, Default, Serialize)]
struct Sound {
    /// Items with an audio track.
    items: usize,
    /// Items ingested with sound whose video had none (`"audio": null`).
    no_sound: usize,
    /// Sample rate -> items with a track at it.
    sample_rates: BTreeMap<u32, usize>,
    /// Channel count -> items with a track of as many.
    channels: BTreeMap<u16, usize>,
    /// The tracks' length in all, in seconds.
    seconds: f64,
}

impl Sound {
    fn add(&mut self, audio: &Audio) {
        match audio {
            Audio::NoTrack => self.no_sound += 1,
            Audio::Track(t) => {
                self.items += 1;
                *self.sample_rates.entry(t.sample_rate).or_default() += 1;
                *self.channels.entry(t.channels).or_default() += 1;
                self.seconds += t.duration();
            }
        }
    }
}

#[derive(Debug, Serialize)]
struct Sizes {
    min: u64,
    median: u64,
    max: u64,
}

#[derive(Debug, Serialize)]
struct Labels {
    count: usize,
    /// Labels in index order.
    names: Vec<String>,
}

pub(super) fn run(args: &InfoArgs) -> Result<Outcome> {
    let info = summarise(args)?;
    let mut out = super::stdout();
    if args.json {
        super::write_json(&mut out, &info)?;
        return Ok(Outcome::Success);
    }
    print_text(&mut out, &info)?;
    Ok(Outcome::Success)
}

/// What `gulp info` says of the directory: with an index file, the frame
/// sizes are read from it; else every chunk's meta is parsed.
fn summarise(args: &InfoArgs) -> Result<Info> {
    let gulp = super::open_dir(&args.dir)?;
    let mut info = Info {
        dir: args.dir.to_string_lossy().into_owned(),
        chunks: gulp.chunks().len(),
        items: gulp.len(),
        frames: 0,
        bytes: 0,
        meta_formats: BTreeMap::new(),
        frame_bytes: None,
        labels: None,
        index: None,
        warnings: gulp.warnings().iter().map(ToString::to_string).collect(),
        audio: None,
        frame_times: None,
    };
    let mut sizes = Vec::new();
    if let Some(index) = gulp.index_file() {
        // Every frame record is in the index file: no meta is parsed.
        for entry in gulp.chunks() {
            info.bytes += std::fs::metadata(&entry.data_path)
                .with_context(|| format!("cannot read {}", entry.data_path.display()))?
                .len();
            *info.meta_formats.entry(entry.format().name()).or_default() += 1;
        }
        info.frames = gulp.n_frames();
        sizes.extend((0..index.n_frames()).filter_map(|f| index.record(f).jpeg_len()));
        info.index = Some(index.bytes().len() as u64);
    }
    let (mut sound, mut timed) = (Sound::default(), 0);
    for (index, entry) in gulp.chunks().iter().enumerate() {
        if info.index.is_some() {
            break;
        }
        let reader = gulp.reader(index)?;
        info.bytes += reader.data_len();
        let format = entry.format();
        *info.meta_formats.entry(format.name()).or_default() += 1;
        for (_, item) in reader.meta().iter() {
            info.frames += item.frame_info.len();
            sizes.extend(item.frame_info.iter().filter_map(|fi| fi.jpeg_len()));
            if let Some(audio) = &item.audio {
                sound.add(audio);
            }
            timed += usize::from(item.frame_times.is_some());
        }
    }
    if info.index.is_none() {
        info.audio = Some(sound);
        info.frame_times = Some(timed);
    }
    if !sizes.is_empty() {
        let mid = sizes.len() / 2;
        let (_, &mut median, _) = sizes.select_nth_unstable(mid);
        info.frame_bytes = Some(Sizes {
            min: sizes.iter().copied().min().unwrap_or(0),
            median,
            max: sizes.iter().copied().max().unwrap_or(0),
        });
    }
    // A label file that breaks the rule is a warning here (the chunks are
    // still described), an error where labels are used.
    match LabelIndex::read(&args.dir) {
        Ok(labels) => {
            info.labels = labels.map(|labels| Labels {
                count: labels.len(),
                names: labels.sorted().iter().map(|(l, _)| l.to_owned()).collect(),
            });
        }
        Err(e) => info.warnings.push(e.to_string()),
    }

    Ok(info)
}

/// The summary as text.
fn print_text(out: &mut impl Write, info: &Info) -> Result<()> {
    let formats: Vec<String> = info
        .meta_formats
        .iter()
        .map(|(name, n)| format!("{name}: {n}"))
        .collect();
    writeln!(out, "directory   {}", info.dir)?;
    if formats.is_empty() {
        writeln!(out, "chunks      {}", info.chunks)?;
    } else {
        writeln!(out, "chunks      {} ({})", info.chunks, formats.join(", "))?;
    }
    writeln!(out, "items       {}", info.items)?;
    writeln!(out, "frames      {}", info.frames)?;
    writeln!(
        out,
        "bytes       {} ({})",
        info.bytes,
        super::human_bytes(info.bytes)
    )?;
    if let Some(s) = &info.frame_bytes {
        writeln!(
            out,
            "frame size  min {}, median {}, max {} (JPEG bytes)",
            s.min, s.median, s.max
        )?;
    }
    if let Some(labels) = &info.labels {
        writeln!(out, "labels      {} ({LABEL_FILE})", labels.count)?;
    }
    if let Some(sound) = info.audio.as_ref().filter(|s| s.items + s.no_sound > 0) {
        writeln!(out, "sound       {}", sound_text(sound))?;
    }
    if let Some(timed) = info.frame_times.filter(|&n| n > 0) {
        writeln!(out, "frame times {timed} {}", items(timed))?;
    }
    if let Some(bytes) = info.index {
        writeln!(
            out,
            "index       {} ({})",
            gulp_io::gulp_format::INDEX_FILE,
            super::human_bytes(bytes)
        )?;
    }
    for warning in &info.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    out.flush()?;
    Ok(())
}

/// `3 items, 12.5 s; 16000 Hz: 3; 1 channel: 3; 1 item without sound`.
fn sound_text(sound: &Sound) -> String {
    let mut parts = vec![format!(
        "{} {}, {:.1} s",
        sound.items,
        items(sound.items),
        sound.seconds
    )];
    let rates: Vec<String> = sound
        .sample_rates
        .iter()
        .map(|(rate, n)| format!("{rate} Hz: {n}"))
        .collect();
    let channels: Vec<String> = sound
        .channels
        .iter()
        .map(|(c, n)| format!("{c} channel{}: {n}", if *c == 1 { "" } else { "s" }))
        .collect();
    parts.extend(rates.into_iter().chain(channels));
    if sound.no_sound > 0 {
        parts.push(format!(
            "{} {} without sound",
            sound.no_sound,
            items(sound.no_sound)
        ));
    }
    parts.join("; ")
}

fn items(n: usize) -> &'static str {
    if n == 1 { "item" } else { "items" }
}
