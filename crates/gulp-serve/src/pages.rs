//! The overview, the grid and the item page.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use gulp_format::{Audio, ItemMeta, JsonSerializer};
use gulp_loader::{DURATION_KEY, FPS_KEY};
use serde::{Deserialize, Serialize};

use crate::error::HttpError;
use crate::html::{bars, esc, page, query, thousands};
use crate::served::{Check, NO_CLASS, Scan, Served, label_text};
use crate::state::{AppState, blocking};

type Page = std::result::Result<Html<String>, HttpError>;

/// Items per grid page unless the URL says otherwise, and the most a URL
/// may ask for.
const PER_PAGE: usize = 48;
const MAX_PER_PAGE: usize = 500;

/// The overview of every directory.
pub(crate) async fn overview(State(state): State<Arc<AppState>>) -> Page {
    let mut body = String::new();
    for (n, served) in state.dirs.iter().enumerate() {
        body.push_str(&dir_summary(n, served));
    }
    if let Some((path, text)) = &state.lint {
        let _ = write!(
            body,
            "<section id=\"lint\"><h2>gulp lint: {}</h2><pre>{}</pre></section>",
            esc(&path.display().to_string()),
            esc(&pretty_json(text))
        );
    }
    Ok(page("Overview", "", &body))
}

fn dir_summary(n: usize, served: &Served) -> String {
    let dir = &served.dir;
    let chunks = dir.chunks();
    let mut out = format!(
        "<section class=\"dir\" data-dir=\"{n}\"><h2><a href=\"/d/{n}/items\">{}</a></h2>",
        esc(&served.name)
    );
    let _ = write!(
        out,
        "<table class=\"numbers\">\
         <tr><th>items</th><td data-k=\"items\" data-v=\"{}\">{}</td></tr>\
         <tr><th>frames</th><td data-k=\"frames\" data-v=\"{}\">{}</td></tr>\
         <tr><th>chunks</th><td data-k=\"chunks\" data-v=\"{}\">{}</td></tr>",
        served.len(),
        thousands(served.len()),
        dir.n_frames(),
        thousands(dir.n_frames()),
        chunks.len(),
        thousands(chunks.len()),
    );
    if let Some(labels) = &served.labels {
        let _ = write!(
            out,
            "<tr><th>label2idx.json</th><td data-k=\"labels\" data-v=\"{0}\">{0} labels</td></tr>",
            labels.len()
        );
    }
    out.push_str("</table>");
    for warning in dir.warnings() {
        let _ = write!(
            out,
            "<p class=\"warning\">{}</p>",
            esc(&warning.to_string())
        );
    }

    let scan = served.read_scan();
    let done = scan.chunks_done == chunks.len();
    if !done {
        let _ = write!(
            out,
            "<p class=\"progress\">reading metas: {} of {} chunks (reload for more)</p>",
            scan.chunks_done,
            chunks.len()
        );
    }
    for e in &scan.errors {
        let _ = write!(out, "<p class=\"warning\">{}</p>", esc(e));
    }
    out.push_str("<div class=\"charts\">");
    charts(&mut out, n, served, &scan);
    out.push_str("</div>");
    let check = check_status(&scan);
    let _ = write!(
        out,
        "<p class=\"check\">gulp check: {check}</p>\
         <p><a href=\"/d/{n}/items\">items</a> · <a href=\"/d/{n}/model\">what the model sees</a></p></section>"
    );
    out
}

/// The charts of a directory's summary: classes, frame sizes, and the
/// shapes of chunks and items.
fn charts(out: &mut String, n: usize, served: &Served, scan: &Scan) {
    let chunks = served.dir.chunks();
    // Classes, most frequent first.
    let mut classes: Vec<(usize, usize)> = scan.class_counts.iter().copied().enumerate().collect();
    classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let rows: Vec<(String, usize)> = classes
        .iter()
        .take(50)
        .map(|&(c, count)| {
            let name = &scan.class_names[c];
            let link = format!("/d/{n}/items?{}", query(&[("class", name)]));
            (
                format!("<a href=\"{}\">{}</a>", esc(&link), esc(name)),
                count,
            )
        })
        .collect();
    let _ = write!(
        out,
        "<div><h3>classes ({})</h3>{}{}</div>",
        scan.class_names.len(),
        bars(&rows, "classes"),
        if classes.len() > 50 {
            "<p>(the 50 largest)</p>"
        } else {
            ""
        }
    );
    // Frame sizes: JPEG bytes per frame, by power of two, and pixel sizes.
    let rows: Vec<(String, usize)> = scan
        .frame_bytes
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0)
        .map(|(k, &c)| (format!("{}–{} B", 1u64 << k, (1u64 << (k + 1)) - 1), c))
        .collect();
    let _ = write!(
        out,
        "<div><h3>JPEG bytes per frame</h3>{}</div>",
        bars(&rows, "bytes")
    );
    let mut dims: Vec<_> = scan.frame_dims.iter().collect();
    dims.sort_by(|a, b| b.1.cmp(a.1));
    let rows: Vec<(String, usize)> = dims
        .iter()
        .take(20)
        .map(|&(&(w, h), &c)| (format!("{w}×{h}"), c))
        .collect();
    let _ = write!(
        out,
        "<div><h3>frame sizes (first frame of each chunk)</h3>{}</div>",
        bars(&rows, "dims")
    );
    // Items per chunk and frames per item, from the index.
    let _ = write!(
        out,
        "<div><h3>items per chunk</h3>{}</div>",
        bars(
            &histogram(chunks.iter().map(|c| c.len() as u64)),
            "chunk-items"
        )
    );
    let _ = write!(
        out,
        "<div><h3>data bytes per chunk</h3>{}</div>",
        bars(
            &histogram(served.chunk_bytes.iter().copied())
                .into_iter()
                .map(|(range, n)| (format!("{range} B"), n))
                .collect::<Vec<_>>(),
            "chunk-bytes"
        )
    );
    let _ = write!(
        out,
        "<div><h3>frames per item</h3>{}</div>",
        bars(
            &histogram(chunks.iter().flat_map(|c| c.index().iter().map(|(_, f)| f))),
            "item-frames"
        )
    );
}

/// What `gulp check` found, as the summary shows it.
fn check_status(scan: &Scan) -> String {
    match &scan.check {
        None => "<span class=\"progress\">running (after the metas)</span>".to_owned(),
        Some(Check::Remote) => "not run (a directory in an object store)".to_owned(),
        Some(Check::Clean) => "<span class=\"ok\">clean</span>".to_owned(),
        Some(Check::Problems(p)) => {
            let mut s = format!("<span class=\"warning\">{} problems</span><ul>", p.len());
            for line in p.iter().take(20) {
                let _ = write!(s, "<li>{}</li>", esc(line));
            }
            s.push_str("</ul>");
            s
        }
        Some(Check::Failed(e)) => format!("<span class=\"warning\">{}</span>", esc(e)),
    }
}

/// Counts by power-of-two bucket: `1`, `2–3`, `4–7`, ...
fn histogram(values: impl Iterator<Item = u64>) -> Vec<(String, usize)> {
    let mut counts: Vec<usize> = Vec::new();
    let mut zero = 0;
    for v in values {
        if v == 0 {
            zero += 1;
            continue;
        }
        let k = (63 - v.leading_zeros()) as usize;
        if counts.len() <= k {
            counts.resize(k + 1, 0);
        }
        counts[k] += 1;
    }
    let mut rows = Vec::new();
    if zero > 0 {
        rows.push(("0".to_owned(), zero));
    }
    for (k, &c) in counts.iter().enumerate() {
        if c > 0 {
            let (lo, hi) = (1u64 << k, (1u64 << (k + 1)) - 1);
            let label = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            };
            rows.push((label, c));
        }
    }
    rows
}

/// A grid's URL parameters. Empty values (as a form sends them) are no
/// filter.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct GridQuery {
    /// Page number, from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per: Option<usize>,
    #[serde(skip_serializing_if = "String::is_empty")]
    class: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    value: String,
    /// `id`, `-id`, `frames`, `-frames`, or empty for the directory's order.
    #[serde(skip_serializing_if = "String::is_empty")]
    sort: String,
}

/// One page of a grid.
struct GridPage {
    positions: Vec<usize>,
    /// Matches in all (unknown with a meta filter: it reads metas only
    /// until the page is full).
    total: Option<usize>,
    more: bool,
    /// The class filter saw only the chunks scanned so far.
    partial: bool,
}

fn select(
    served: &Served,
    q: &GridQuery,
    offset: usize,
    per: usize,
) -> Result<GridPage, HttpError> {
    let n = served.len();
    let order: Box<dyn Iterator<Item = usize>> = match q.sort.as_str() {
        "" => Box::new(0..n),
        "id" | "frames" => Box::new(served.sorted(&q.sort).iter().map(|&p| p as usize)),
        "-id" | "-frames" => Box::new(
            served
                .sorted(&q.sort[1..])
                .iter()
                .rev()
                .map(|&p| p as usize),
        ),
        other => {
            return Err(HttpError::bad_request(format!(
                "sort {other:?}: use id, -id, frames or -frames"
            )));
        }
    };
    let scan = served.read_scan();
    let partial = !q.class.is_empty() && scan.chunks_done < served.dir.chunks().len();
    // A class no item has read so far matches nothing (NO_CLASS - 1 is
    // no class's number: there are fewer classes than items).
    let class = if q.class.is_empty() {
        None
    } else {
        Some(
            scan.class_names
                .iter()
                .position(|c| *c == q.class)
                .map_or(NO_CLASS - 1, |c| u32::try_from(c).unwrap_or(NO_CLASS - 1)),
        )
    };
    let meta_filter = !q.key.is_empty();
    let want = offset.saturating_add(per);
    let mut positions = Vec::new();
    let mut matched = 0usize;
    for pos in order {
        if let Some(c) = class
            && scan.class_of.get(pos) != Some(&c)
        {
            continue;
        }
        if !q.prefix.is_empty() {
            let Some((id, _)) = served.item_at(pos) else {
                continue;
            };
            if !id.starts_with(&q.prefix) {
                continue;
            }
        }
        if meta_filter && !meta_matches(served, pos, &q.key, &q.value)? {
            continue;
        }
        if matched >= offset && matched < want {
            positions.push(pos);
        }
        matched += 1;
        if meta_filter && matched > want {
            break;
        }
    }
    Ok(GridPage {
        positions,
        total: (!meta_filter).then_some(matched),
        more: matched > want,
        partial,
    })
}

/// Whether the meta of the item at `pos` has `key` (equal to `value`, if
/// one is given). Parses the item's chunk meta on first use.
fn meta_matches(served: &Served, pos: usize, key: &str, value: &str) -> Result<bool, HttpError> {
    let Some((chunk, k)) = served.locate(pos) else {
        return Ok(false);
    };
    let meta = served.dir.chunks()[chunk].meta().map_err(HttpError::data)?;
    let found = meta
        .get_index(k)
        .and_then(|(_, item)| item.first_meta_data())
        .and_then(|m| m.get(key));
    Ok(match found {
        None => false,
        Some(_) if value.is_empty() => true,
        Some(v) => {
            label_text(v).as_deref() == Some(value) || JsonSerializer::value_to_string(v) == value
        }
    })
}

/// The grid of directory `n`.
pub(crate) async fn grid(
    State(state): State<Arc<AppState>>,
    Path(n): Path<usize>,
    Query(q): Query<GridQuery>,
) -> Page {
    let served = Arc::clone(state.dir(n)?);
    let page_no = q.page.unwrap_or(1);
    let per = q.per.unwrap_or(PER_PAGE);
    if page_no == 0 {
        return Err(HttpError::bad_request("pages count from 1"));
    }
    if per == 0 || per > MAX_PER_PAGE {
        return Err(HttpError::bad_request(format!(
            "per must be 1 to {MAX_PER_PAGE}"
        )));
    }
    let offset = (page_no - 1)
        .checked_mul(per)
        .ok_or_else(|| HttpError::bad_request("page out of range"))?;
    blocking(move || {
        let found = select(&served, &q, offset, per)?;
        Ok(render_grid(n, &served, &q, page_no, per, &found))
    })
    .await
}

fn render_grid(
    n: usize,
    served: &Served,
    q: &GridQuery,
    page_no: usize,
    per: usize,
    found: &GridPage,
) -> Html<String> {
    let url = |page: usize| {
        let mut q = q.clone();
        q.page = (page > 1).then_some(page);
        let s = serde_urlencoded::to_string(&q).unwrap_or_default();
        if s.is_empty() {
            format!("/d/{n}/items")
        } else {
            format!("/d/{n}/items?{s}")
        }
    };
    let scan = served.read_scan();
    let mut body = String::new();
    body.push_str(&filter_form(n, q, per, &scan));
    let shown = match found.total {
        Some(total) => format!(
            "<span id=\"total\" data-v=\"{total}\">{}</span> items",
            thousands(total)
        ),
        None => "items matching the meta filter".to_owned(),
    };
    let pages = found.total.map(|t| t.div_ceil(per).max(1));
    let _ = write!(
        body,
        "<p class=\"summary\">{shown}; page <span id=\"page\">{page_no}</span>{}{}</p>",
        pages.map_or(String::new(), |p| format!(
            " of <span id=\"pages\" data-v=\"{p}\">{}</span>",
            thousands(p)
        )),
        if found.partial {
            format!(
                " <span class=\"progress\">(classes read for {} of {} chunks so far: reload for more)</span>",
                scan.chunks_done,
                served.dir.chunks().len()
            )
        } else {
            String::new()
        }
    );
    body.push_str("<div class=\"grid\">");
    for &pos in &found.positions {
        let Some((id, frames)) = served.item_at(pos) else {
            continue;
        };
        let label = scan
            .class_of
            .get(pos)
            .filter(|&&c| c != NO_CLASS)
            .and_then(|&c| scan.class_names.get(c as usize))
            .map_or(String::new(), |l| esc(l));
        let qid = query(&[("id", id)]);
        let _ = write!(
            body,
            "<a class=\"item\" data-id=\"{eid}\" href=\"/d/{n}/item?{qid}\">\
             <img loading=\"lazy\" alt=\"\" src=\"/d/{n}/thumb?{qid}\">\
             <span class=\"id\">{eid}</span><span class=\"meta\">{frames} frames · {label}</span></a>",
            eid = esc(id),
        );
    }
    body.push_str("</div><p class=\"pager\">");
    if page_no > 1 {
        let _ = write!(
            body,
            "<a id=\"prev\" rel=\"prev\" href=\"{}\">← previous</a> ",
            esc(&url(page_no - 1))
        );
    }
    if found.more {
        let _ = write!(
            body,
            "<a id=\"next\" rel=\"next\" href=\"{}\">next →</a>",
            esc(&url(page_no + 1))
        );
    }
    body.push_str("</p>");
    page(&served.name, &dir_nav(n, served), &body)
}

/// The filter form of the grid: a GET, so that the result is a URL.
fn filter_form(n: usize, q: &GridQuery, per: usize, scan: &Scan) -> String {
    let mut body = String::new();
    let mut classes: Vec<&String> = scan.class_names.iter().collect();
    classes.sort();
    let mut options = String::from("<option value=\"\">all classes</option>");
    for c in classes {
        let selected = if *c == q.class { " selected" } else { "" };
        let _ = write!(
            options,
            "<option value=\"{0}\"{selected}>{0}</option>",
            esc(c)
        );
    }
    let sorts = [
        ("", "directory order"),
        ("id", "id"),
        ("-id", "id, descending"),
        ("frames", "frames"),
        ("-frames", "frames, descending"),
    ];
    let mut sort_options = String::new();
    for (v, label) in sorts {
        let selected = if v == q.sort { " selected" } else { "" };
        let _ = write!(
            sort_options,
            "<option value=\"{v}\"{selected}>{label}</option>"
        );
    }
    let _ = write!(
        body,
        "<form class=\"filters\" method=\"get\" action=\"/d/{n}/items\">\
         <select name=\"class\" id=\"class\">{options}</select>\
         <input name=\"prefix\" id=\"prefix\" placeholder=\"id prefix\" value=\"{}\">\
         <input name=\"key\" placeholder=\"meta key\" value=\"{}\">\
         <input name=\"value\" placeholder=\"value\" value=\"{}\">\
         <select name=\"sort\">{sort_options}</select>\
         <input type=\"hidden\" name=\"per\" value=\"{per}\">\
         <button type=\"submit\" id=\"apply\">show</button></form>",
        esc(&q.prefix),
        esc(&q.key),
        esc(&q.value),
    );
    body
}

fn dir_nav(n: usize, served: &Served) -> String {
    format!(
        " › <a href=\"/d/{n}/items\">{}</a> · <a href=\"/d/{n}/model\">what the model sees</a>",
        esc(&served.name)
    )
}

/// `?id=ID` of an item page (and of its sound).
#[derive(Deserialize)]
pub(crate) struct ItemQuery {
    pub id: String,
}

/// The page of one item.
pub(crate) async fn item(
    State(state): State<Arc<AppState>>,
    Path(n): Path<usize>,
    Query(q): Query<ItemQuery>,
) -> Page {
    let served = Arc::clone(state.dir(n)?);
    if !served.dir.contains(&q.id) {
        return Err(HttpError::not_found(format!(
            "no item {:?} in {}",
            q.id, served.name
        )));
    }
    let others: Vec<(usize, String)> = state
        .dirs
        .iter()
        .enumerate()
        .filter(|(k, d)| *k != n && d.dir.contains(&q.id))
        .map(|(k, d)| (k, d.name.clone()))
        .collect();
    blocking(move || render_item(n, &served, &q.id, &others)).await
}

fn render_item(n: usize, served: &Served, id: &str, others: &[(usize, String)]) -> Page {
    let item = served.dir.item(id).map_err(HttpError::data)?;
    let reader = served.dir.reader_for(id).map_err(HttpError::data)?;
    let qid = query(&[("id", id)]);
    let frames = item.frame_info.len();
    let mut body = String::new();
    if !others.is_empty() {
        body.push_str("<p class=\"others\">also in: ");
        for (k, name) in others {
            let _ = write!(
                body,
                "<a class=\"other\" href=\"/d/{k}/item?{qid}\">{}</a> ",
                esc(name)
            );
        }
        body.push_str("</p>");
    }
    player(&mut body, n, &qid, item);
    body.push_str("<h2>frames</h2><div class=\"strip\">");
    for k in 0..frames {
        let _ = write!(
            body,
            "<img loading=\"lazy\" data-frame=\"{k}\" alt=\"frame {k}\" src=\"/d/{n}/thumb?{qid}&amp;frame={k}\">"
        );
    }
    body.push_str("</div>");
    let meta = item
        .first_meta_data()
        .map(JsonSerializer::value_to_string)
        .unwrap_or_else(|| "(no meta_data)".into());
    let _ = write!(
        body,
        "<h2>meta</h2><pre id=\"meta\">{}</pre>",
        esc(&pretty_json(&meta))
    );
    body.push_str(
        "<h2>frame sizes</h2><table class=\"sizes\"><tr><th>frame</th><th>pixels</th><th>JPEG bytes</th></tr>",
    );
    for (k, fi) in item.frame_info.iter().enumerate() {
        let dims = reader
            .frame(id, k)
            .ok()
            .and_then(|jpeg| gulp_codec::read_header(&jpeg, gulp_codec::Codec::default()).ok())
            .map_or("unreadable".to_owned(), |h| {
                format!("{}×{}", h.width, h.height)
            });
        let _ = write!(
            body,
            "<tr><td>{k}</td><td>{dims}</td><td>{}</td></tr>",
            fi.jpeg_len().map_or("?".into(), |b| b.to_string())
        );
    }
    body.push_str("</table>");
    Ok(page(id, &dir_nav(n, served), &body))
}

/// The player of an item's frames (`app.js`), and its sound: an audio
/// player whose clock the frames follow, or a word that the video had none.
fn player(body: &mut String, n: usize, qid: &str, item: &ItemMeta) {
    let frames = item.frame_info.len();
    let track = item.audio_track();
    if frames > 0 {
        // With sound, the frames follow the audio's clock (app.js): each
        // frame's time, and the time of the sound's first sample.
        let mut clock = String::new();
        if let Some(times) = frame_times(item) {
            let list: Vec<String> = times.iter().map(f64::to_string).collect();
            let _ = write!(clock, " data-times=\"[{}]\"", list.join(","));
        }
        if let Some(t) = track {
            let _ = write!(clock, " data-audio-start=\"{}\"", t.start);
        }
        let rate = if track.is_some() {
            // The sound sets the pace.
            String::new()
        } else {
            "<label>fps <input id=\"fps\" type=\"number\" min=\"1\" max=\"60\" value=\"8\"></label>"
                .into()
        };
        let _ = write!(
            body,
            "<div class=\"player\" data-frames=\"{frames}\" data-src=\"/d/{n}/frame?{qid}\"{clock}>\
             <img id=\"player\" alt=\"frame 0\" data-frame=\"0\" src=\"/d/{n}/frame?{qid}&amp;frame=0\">\
             <div class=\"controls\"><button id=\"play\" type=\"button\">play</button>{rate}\
             <input id=\"seek\" type=\"range\" min=\"0\" max=\"{}\" value=\"0\">\
             <span id=\"frame-no\">0</span> / {frames}\
             <span class=\"keys\">space: play/pause · ←/→: frame{}</span></div></div>",
            frames - 1,
            if track.is_some() {
                ""
            } else {
                " · +/−: speed"
            }
        );
    }
    match &item.audio {
        Some(Audio::Track(t)) => {
            let _ = write!(
                body,
                "<div class=\"sound\"><audio id=\"audio\" controls preload=\"auto\" src=\"/d/{n}/audio?{qid}\"></audio>\
                 <span id=\"sound-info\">{} Hz, {} channel{}, {:.2} s from {:.3} s</span></div>",
                t.sample_rate,
                t.channels,
                if t.channels == 1 { "" } else { "s" },
                t.duration(),
                t.start
            );
        }
        Some(Audio::NoTrack) => body.push_str(
            "<p class=\"sound\" id=\"no-sound\">no sound: the video had none that could be decoded</p>",
        ),
        None => {}
    }
}

/// Each frame's time in seconds (`docs/format.md` §8.3): its frame times,
/// else `i / fps` from the meta's `fps`, else from its `duration`; `None`
/// when the item says none of them (the player's rate is then the page's).
fn frame_times(item: &ItemMeta) -> Option<Vec<f64>> {
    let n = item.frame_info.len();
    if let Some(times) = &item.frame_times {
        return Some(times.to_list(n));
    }
    let meta = item.first_meta_data()?;
    let positive = |key: &str| {
        meta.get(key)
            .and_then(gulp_format::Value::as_f64)
            .filter(|x| x.is_finite() && *x > 0.0)
    };
    #[allow(clippy::cast_precision_loss)] // frame counts are far below 2^53
    let fps = positive(FPS_KEY).or_else(|| positive(DURATION_KEY).map(|d| n as f64 / d))?;
    #[allow(clippy::cast_precision_loss)]
    Some((0..n).map(|i| i as f64 / fps).collect())
}

/// Indents compact JSON for reading (the meta's own order kept).
fn pretty_json(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_owned())
}
