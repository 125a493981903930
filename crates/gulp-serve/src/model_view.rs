//! "What the model sees": one batch of a [`Loader`] configured in the page,
//! each clip beside its source frames with the crop drawn on them.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use base64::Engine;
use gulp_codec::Image;
use gulp_loader::{CropMode, Loader, LoaderOptions, Order, Sampling, Spatial};
use serde::Deserialize;

use crate::error::HttpError;
use crate::html::{esc, page, query};
use crate::served::Served;
use crate::state::{AppState, blocking};

/// Limits of a configuration given in a URL: what one page may decode.
const MAX_FRAMES: usize = 64;
const MAX_BATCH_SIZE: usize = 32;
const MAX_BATCH: usize = 100;

/// The page's loader configuration, as URL parameters (every field a text
/// box of the form, so that a wrong value is reported, not rejected by the
/// URL parser).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct ModelQuery {
    frames: String,
    sampling: String,
    step: String,
    resize: String,
    size: String,
    crop: String,
    flip: String,
    train: String,
    seed: String,
    epoch: String,
    batch: String,
    batch_size: String,
}

impl Default for ModelQuery {
    fn default() -> ModelQuery {
        ModelQuery {
            frames: "8".into(),
            sampling: "segments".into(),
            step: "1".into(),
            resize: "128".into(),
            size: "112".into(),
            crop: "random".into(),
            flip: "1".into(),
            train: "1".into(),
            seed: "0".into(),
            epoch: "0".into(),
            batch: "0".into(),
            batch_size: "4".into(),
        }
    }
}

fn number<T: std::str::FromStr>(name: &str, text: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{name}: {text:?} is not a number"))
}

fn flag(text: &str) -> bool {
    matches!(text, "1" | "true" | "on" | "yes")
}

/// The loader options of the page's configuration, with the options' own
/// parsers (`Sampling::parse`, `CropMode::parse`); also the batch to show.
pub(crate) fn loader_options(q: &ModelQuery) -> Result<(LoaderOptions, usize), String> {
    let frames: usize = number("frames", &q.frames)?;
    let batch_size: usize = number("batch_size", &q.batch_size)?;
    let batch: usize = number("batch", &q.batch)?;
    if !(1..=MAX_FRAMES).contains(&frames) {
        return Err(format!("frames: 1 to {MAX_FRAMES} here"));
    }
    if !(1..=MAX_BATCH_SIZE).contains(&batch_size) {
        return Err(format!("batch_size: 1 to {MAX_BATCH_SIZE} here"));
    }
    if batch > MAX_BATCH {
        return Err(format!("batch: 0 to {MAX_BATCH} here"));
    }
    // The names of gulp-loader's lists, and their errors.
    let sampling: Sampling = q.sampling.trim().parse().map_err(|e| format!("{e}"))?;
    let crop: CropMode = q.crop.trim().parse().map_err(|e| format!("{e}"))?;
    let resize = match q.resize.trim() {
        "" | "none" => None,
        text => Some(number("resize", text)?),
    };
    let size = match q.size.trim() {
        "" | "none" => None,
        // One reading of a size for the command line and this page: H,W, N,
        // or ffmpeg's WxH in its own order.
        text => Some(
            gulp_loader::parse_size(text)
                .map(|(size, _)| size)
                .ok_or_else(|| format!("size: {text:?} is not H,W or N"))?,
        ),
    };
    let options = LoaderOptions {
        frames,
        sampling,
        step: number("step", &q.step)?,
        spatial: Spatial {
            resize,
            size,
            crop,
            flip: flag(&q.flip),
        },
        batch_size,
        order: Order {
            seed: number("seed", &q.seed)?,
            ..Order::default()
        },
        train: Some(flag(&q.train)),
        threads: Some(1),
        prefetch: 1,
        ..LoaderOptions::default()
    };
    Ok((options, batch))
}

/// The page.
pub(crate) async fn model_page(
    State(state): State<Arc<AppState>>,
    Path(n): Path<usize>,
    Query(q): Query<ModelQuery>,
) -> Result<Html<String>, HttpError> {
    let served = Arc::clone(state.dir(n)?);
    let open = state.open.clone();
    blocking(move || {
        let form = form(n, &q);
        let result = loader_options(&q).and_then(|(mut options, batch)| {
            let epoch: u64 = number("epoch", &q.epoch)?;
            options.open = open;
            options.labels.key.clone_from(&served.label_key);
            if served.labels.is_none() {
                // String labels without a label2idx.json: numbered in sorted
                // order, as an ingest numbers them, once the scan has seen
                // them all.
                let scan = served.read_scan();
                if scan.chunks_done == served.dir.chunks().len() {
                    let mut names = scan.class_names.clone();
                    names.sort();
                    options.labels.index = Some(names.into_iter().zip(0i64..).collect());
                }
            }
            clips(n, &served, options, epoch, batch)
        });
        let body = match result {
            Ok(clips) => format!("{form}{clips}"),
            Err(e) => format!(
                "{form}<p class=\"warning\" id=\"model-error\">{}</p>",
                esc(&e)
            ),
        };
        Ok(page(
            &format!("What the model sees: {}", served.name),
            &format!(" › <a href=\"/d/{n}/items\">{}</a>", esc(&served.name)),
            &body,
        ))
    })
    .await
}

fn form(n: usize, q: &ModelQuery) -> String {
    let field = |name: &str, value: &str, help: &str| {
        format!(
            "<label title=\"{help}\">{name} <input name=\"{name}\" value=\"{}\" size=\"8\"></label>",
            esc(value)
        )
    };
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/d/{n}/model\">{}{}{}{}{}{}{}{}{}{}{}{}\
         <button type=\"submit\" id=\"load\">load</button></form>",
        field("frames", &q.frames, "frames per clip"),
        field("sampling", &q.sampling, "window, segments, uniform, dense"),
        field("step", &q.step, "frame step of window and dense"),
        field("resize", &q.resize, "short edge, or none"),
        field("size", &q.size, "N or H,W, or none"),
        field(
            "crop",
            &q.crop,
            "none, center, random, random_resized, three"
        ),
        field("flip", &q.flip, "1 or 0"),
        field("train", &q.train, "1: random draws; 0: evaluation"),
        field("seed", &q.seed, "the loader's seed"),
        field("epoch", &q.epoch, "the epoch"),
        field("batch", &q.batch, "batch number in the epoch"),
        field("batch_size", &q.batch_size, "clips per batch"),
    )
}

/// Runs the loader to batch `batch` of `epoch` and renders its clips.
fn clips(
    n: usize,
    served: &Served,
    options: LoaderOptions,
    epoch: u64,
    batch: usize,
) -> Result<String, String> {
    let mut loader = Loader::open(served.dir.path(), options).map_err(|e| e.to_string())?;
    loader.set_epoch(epoch);
    let batches = loader.len();
    let b = loader
        .iter()
        .nth(batch)
        .ok_or_else(|| format!("epoch {epoch} has {batches} batches, no batch {batch}"))?
        .map_err(|e| e.to_string())?;
    let [clips, t, h, w, c] = b.shape;
    let mut out = format!(
        "<p class=\"summary\">batch {batch} of {batches} in epoch {epoch}: \
         <span id=\"shape\">[{clips}, {t}, {h}, {w}, {c}]</span> uint8</p>"
    );
    let per_frame = h * w * c;
    for k in 0..clips {
        let id = &b.ids[k];
        let qid = query(&[("id", id)]);
        let geometry = b.geometries.get(k);
        let label = b
            .labels
            .get(k)
            .map_or(String::new(), |l| format!(" · label {l}"));
        let _ = write!(
            out,
            "<section class=\"clip\"><h3><a href=\"/d/{n}/item?{qid}\">{}</a>{label}{}</h3><div class=\"strip\">",
            esc(id),
            if geometry.is_some_and(|g| g.flip) {
                " · flipped"
            } else {
                ""
            }
        );
        for f in 0..t {
            let at = (k * t + f) * per_frame;
            let Some(pixels) = b.frames.get(at..at + per_frame) else {
                continue;
            };
            let image = Image {
                height: h,
                width: w,
                channels: c,
                pixels: pixels.to_vec(),
            };
            let jpeg = crate::thumbs::encode(&image)?;
            let _ = write!(
                out,
                "<img class=\"seen\" alt=\"clip {k} frame {f}\" src=\"data:image/jpeg;base64,{}\">",
                base64::engine::general_purpose::STANDARD.encode(jpeg)
            );
        }
        out.push_str("</div><div class=\"strip\">");
        for f in 0..t {
            let Some(&index) = b.indices.get(k * t + f) else {
                continue;
            };
            let crop = geometry.map_or(String::new(), |g| {
                let [x, y, cw, ch] = g.rect;
                format!(
                    "<span class=\"crop\" style=\"left:{:.2}%;top:{:.2}%;width:{:.2}%;height:{:.2}%\"></span>",
                    x * 100.0,
                    y * 100.0,
                    cw * 100.0,
                    ch * 100.0
                )
            });
            let _ = write!(
                out,
                "<span class=\"source\"><img alt=\"frame {index}\" src=\"/d/{n}/thumb?{qid}&amp;frame={index}\">{crop}<span class=\"index\">{index}</span></span>"
            );
        }
        out.push_str("</div></section>");
    }
    for s in &b.skipped {
        let _ = write!(
            out,
            "<p class=\"warning\">{}: {}</p>",
            esc(&s.id),
            esc(&s.reason)
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(text: &str) -> Result<Option<(usize, usize)>, String> {
        let q = ModelQuery {
            size: text.into(),
            crop: if text.is_empty() { "none" } else { "center" }.into(),
            ..ModelQuery::default()
        };
        loader_options(&q).map(|(options, _)| options.spatial.size)
    }

    /// The page reads a size as the command line does: `H,W`, `N`, and
    /// ffmpeg's `WxH` in its own order (it once read `160x120` as 160 high).
    #[test]
    fn the_page_reads_a_size_as_the_command_line_does() {
        assert_eq!(size("112,144"), Ok(Some((112, 144))));
        assert_eq!(size("96"), Ok(Some((96, 96))));
        assert_eq!(size("160x120"), Ok(Some((120, 160))));
        assert_eq!(size(""), Ok(None));
        assert_eq!(size("12,a"), Err("size: \"12,a\" is not H,W or N".into()));
    }
}
