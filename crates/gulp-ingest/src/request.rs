//! What to ingest, as every front end says it: a built-in adapter
//! ([`AdapterKind`]), its input paths, the output directory and the
//! options. The `gulp ingest` command and Python's `gulp.ingest` only turn
//! their own arguments into an [`IngestRequest`]; the kinds, their inputs
//! and the rules the options follow live here once.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::adapters::Dataset;
use crate::dataset::DatasetAdapter;
use crate::error::{Error, Result};
use crate::manifest::{Manifest, ManifestOptions};
use crate::pipeline::IngestOptions;
use crate::shard::{Plan, Shard};

/// The built-in adapters: one per input layout of gulpio2's scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterKind {
    /// `20bn-json`: a JSON list of `{"id", "template"}`, videos in
    /// `<videos_dir>/<id>/` (Something-Something, Jester).
    TwentyBnJson,
    /// `20bn-csv-webm`: `id;label` lines, videos `<videos_dir>/<id>.webm`.
    TwentyBnCsvWebm,
    /// `20bn-csv-jpeg`: `id;label` lines, JPEG frames in `<jpeg_dir>/<id>/`.
    TwentyBnCsvJpeg,
    /// `video-folder`: `<videos_dir>/<label>/<video>`.
    VideoFolder,
    /// `image-folder`: `<images_dir>/<label>/<image>`.
    ImageFolder,
    /// `image-list`: `path,label` lines, paths relative to a root folder.
    ImageList,
    /// `kinetics`: the annotation CSV and a folder of videos.
    Kinetics,
    /// `activitynet`: the annotation JSON and a folder of videos.
    Activitynet,
    /// `epic-kitchens`: the action annotation CSV and a folder of videos
    /// (or of frame folders); one item per video, its actions as segments.
    EpicKitchens,
    /// `manifest`: a CSV, JSONL or Parquet table of clips of videos
    /// ([`crate::manifest`]).
    Manifest,
}

impl AdapterKind {
    /// Every kind, in the order `gulp ingest --help` lists them.
    pub const ALL: [AdapterKind; 10] = [
        AdapterKind::TwentyBnJson,
        AdapterKind::TwentyBnCsvWebm,
        AdapterKind::TwentyBnCsvJpeg,
        AdapterKind::VideoFolder,
        AdapterKind::ImageFolder,
        AdapterKind::ImageList,
        AdapterKind::Kinetics,
        AdapterKind::Activitynet,
        AdapterKind::EpicKitchens,
        AdapterKind::Manifest,
    ];

    /// The kind's name on the command line and in Python.
    pub fn name(self) -> &'static str {
        match self {
            AdapterKind::TwentyBnJson => "20bn-json",
            AdapterKind::TwentyBnCsvWebm => "20bn-csv-webm",
            AdapterKind::TwentyBnCsvJpeg => "20bn-csv-jpeg",
            AdapterKind::VideoFolder => "video-folder",
            AdapterKind::ImageFolder => "image-folder",
            AdapterKind::ImageList => "image-list",
            AdapterKind::Kinetics => "kinetics",
            AdapterKind::Activitynet => "activitynet",
            AdapterKind::EpicKitchens => "epic-kitchens",
            AdapterKind::Manifest => "manifest",
        }
    }

    /// The input paths the kind reads, by name, in order.
    pub fn inputs(self) -> &'static [&'static str] {
        match self {
            AdapterKind::TwentyBnJson => &["input_json", "videos_dir"],
            AdapterKind::TwentyBnCsvWebm | AdapterKind::Kinetics | AdapterKind::EpicKitchens => {
                &["input_csv", "videos_dir"]
            }
            AdapterKind::TwentyBnCsvJpeg => &["input_csv", "jpeg_dir"],
            AdapterKind::VideoFolder => &["videos_dir"],
            AdapterKind::ImageFolder => &["images_dir"],
            AdapterKind::ImageList => &["list_file", "root_dir"],
            AdapterKind::Activitynet => &["input_json", "videos_dir"],
            AdapterKind::Manifest => &["manifest"],
        }
    }

    /// What the first input is, for messages ("cannot read the ...").
    pub fn source(self) -> &'static str {
        match self {
            AdapterKind::TwentyBnJson => "20BN JSON list",
            AdapterKind::TwentyBnCsvWebm | AdapterKind::TwentyBnCsvJpeg => "20BN CSV list",
            AdapterKind::VideoFolder => "video folder",
            AdapterKind::ImageFolder => "image folder",
            AdapterKind::ImageList => "image list",
            AdapterKind::Kinetics => "Kinetics CSV",
            AdapterKind::Activitynet => "ActivityNet JSON",
            AdapterKind::EpicKitchens => "EPIC-Kitchens CSV",
            AdapterKind::Manifest => "manifest",
        }
    }
}

impl fmt::Display for AdapterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AdapterKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<AdapterKind> {
        AdapterKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<String> = AdapterKind::ALL
                    .iter()
                    .map(|k| format!("{:?}", k.name()))
                    .collect();
                Error::Options(format!(
                    "unknown adapter {name:?}: one of {}",
                    names.join(", ")
                ))
            })
    }
}

impl Shard {
    /// The task of a `--shard` argument for a run into `output`: `I/N`, or
    /// `auto` (from the scheduler's variables, see [`Shard::from_env`],
    /// with the count of the run under way in `output` if there is one, and
    /// `count` from `--shard-count`).
    pub fn from_arg(text: &str, count: Option<usize>, output: &Path) -> Result<Shard> {
        let shard = if text == "auto" {
            let planned = Plan::read(output)?.map(|plan| plan.count);
            Shard::from_env(|k| std::env::var(k).ok(), count, planned)
        } else {
            Shard::parse(text)
        };
        shard.map_err(|e| Error::Options(format!("shard: {e}")))
    }
}

/// Settings only some adapters read.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterOptions {
    /// `20bn-json`: the field of each entry that holds the label.
    pub label_name: String,
    /// `activitynet`: the subset to take (`training`, `validation`,
    /// `testing`).
    pub phase: String,
    /// `manifest`: the root of relative paths, `--segments`, the columns
    /// and the clip length (its frame rate is the run's).
    pub manifest: ManifestOptions,
}

impl Default for AdapterOptions {
    fn default() -> AdapterOptions {
        AdapterOptions {
            label_name: "template".to_owned(),
            phase: "training".to_owned(),
            manifest: ManifestOptions::default(),
        }
    }
}

/// One ingest: which adapter reads what, where it goes, and how.
///
/// ```
/// use std::path::{Path, PathBuf};
/// use gulp_ingest::{AdapterKind, IngestRequest};
/// let request = IngestRequest::new(
///     "image-folder".parse::<AdapterKind>()?,
///     vec![PathBuf::from("images")],
///     PathBuf::from("gulped"),
/// );
/// assert!(request.check().is_ok());
/// let mut wrong = request.clone();
/// wrong.inputs.push(PathBuf::from("extra"));
/// assert!(wrong.check().unwrap_err().to_string().contains("takes 1 input path"));
/// # Ok::<(), gulp_ingest::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct IngestRequest {
    /// The adapter.
    pub kind: AdapterKind,
    /// Its input paths, as [`AdapterKind::inputs`] names them.
    pub inputs: Vec<PathBuf>,
    /// The gulp directory to write (local or `s3://`).
    pub output: PathBuf,
    /// Settings of some adapters.
    pub adapter: AdapterOptions,
    /// How to ingest.
    pub options: IngestOptions,
}

impl IngestRequest {
    /// A request with the default options.
    pub fn new(kind: AdapterKind, inputs: Vec<PathBuf>, output: PathBuf) -> IngestRequest {
        IngestRequest {
            kind,
            inputs,
            output,
            adapter: AdapterOptions::default(),
            options: IngestOptions::default(),
        }
    }

    /// Checks what can be checked before anything is read: the number of
    /// inputs and the options' ranges.
    pub fn check(&self) -> Result<()> {
        let names = self.kind.inputs();
        if self.inputs.len() != names.len() {
            return Err(Error::Options(format!(
                "adapter {:?} takes {} input path(s) ({}), not {}",
                self.kind.name(),
                names.len(),
                names.join(", "),
                self.inputs.len()
            )));
        }
        let o = &self.options;
        crate::frames::check_ranges(o.items_per_chunk, o.workers, &o.frames)
    }

    /// The adapter over the inputs (reads the list or walks the folders).
    pub fn dataset(&self) -> Result<Box<dyn DatasetAdapter>> {
        self.check()?;
        let i = &self.inputs;
        let out = &self.output;
        let dataset = match self.kind {
            AdapterKind::TwentyBnJson => {
                Dataset::twenty_bn_json(&i[0], &i[1], out, &self.adapter.label_name)?
            }
            AdapterKind::TwentyBnCsvWebm => Dataset::twenty_bn_csv_webm(&i[0], &i[1], out)?,
            AdapterKind::TwentyBnCsvJpeg => Dataset::twenty_bn_csv_jpeg(&i[0], &i[1], out)?,
            AdapterKind::VideoFolder => Dataset::video_folder(&i[0], out)?,
            AdapterKind::ImageFolder => Dataset::image_folder(&i[0], out)?,
            AdapterKind::ImageList => Dataset::image_list(&i[0], &i[1], out)?,
            AdapterKind::Kinetics => Dataset::kinetics(&i[0], &i[1], out)?,
            AdapterKind::Activitynet => {
                Dataset::activitynet(&i[0], &i[1], out, &self.adapter.phase)?
            }
            AdapterKind::EpicKitchens => Dataset::epic_kitchens(&i[0], &i[1])?,
            AdapterKind::Manifest => {
                let opts = ManifestOptions {
                    frame_rate: self.options.frames.frame_rate,
                    ..self.adapter.manifest.clone()
                };
                return Ok(Box::new(Manifest::read(&i[0], out, &opts)?));
            }
        };
        Ok(Box::new(dataset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::SubsamplingChoice;

    #[test]
    fn kinds_round_trip_by_name() {
        for kind in AdapterKind::ALL {
            assert_eq!(kind.name().parse::<AdapterKind>().expect("known"), kind);
            assert!(!kind.inputs().is_empty() && !kind.source().is_empty());
        }
        let err = "20bn".parse::<AdapterKind>().expect_err("unknown");
        assert!(err.to_string().contains("\"20bn-json\""), "{err}");
    }

    #[test]
    fn options_out_of_range_are_refused_by_name() {
        let base = IngestRequest::new(
            AdapterKind::VideoFolder,
            vec![PathBuf::from("v")],
            PathBuf::from("o"),
        );
        let mut r = base.clone();
        r.options.frames.frame_rate = Some(0.0);
        assert!(
            r.check()
                .expect_err("rate")
                .to_string()
                .contains("frame rate")
        );
        let mut r = base.clone();
        r.options.items_per_chunk = 0;
        assert!(
            r.check()
                .expect_err("chunk")
                .to_string()
                .contains("per chunk")
        );
        let mut r = base;
        r.options.frames.quality = 0;
        assert!(r.check().expect_err("q").to_string().contains("quality"));
        assert_eq!(
            "4:2:0".parse::<SubsamplingChoice>().expect("ok"),
            SubsamplingChoice::S420
        );
        assert!("422".parse::<SubsamplingChoice>().is_err());
    }
}
