//! `gulp serve` over real HTTP: pages and thumbnails of real directories,
//! an item's sound (real videos through the real ingest), and the safety
//! cases — paths and ids that try to leave the served directories,
//! malformed requests, slow clients.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use gulp_format::Value;
use gulp_serve::{App, Options};
use gulp_test_support::gulp_dir::{GulpDirBuilder, gradient_jpeg};

const SECRET: &str = "TOP-SECRET-0d9f";

/// Writes `ids` into `dir`, `per_chunk` items a chunk, 3 frames each,
/// labels `class-0`, `class-1`, ... by the item's place in its chunk.
fn write_dir(dir: &Path, ids: &[&str], per_chunk: usize) {
    let frames: Vec<Vec<u8>> = (0..3).map(|f| gradient_jpeg(160, 120, f)).collect();
    GulpDirBuilder::new(dir)
        .items(ids, per_chunk, |position, _| {
            let k = position % per_chunk;
            let mut meta = gulp_format::Map::default();
            meta.insert(
                "label".into(),
                Value::from(format!("class-{}", k % 2).as_str()),
            );
            meta.insert("n".into(), Value::Int(k as i64));
            (Value::Object(meta), frames.clone())
        })
        .write();
}

struct Served {
    addr: SocketAddr,
    _tmp: tempfile::TempDir,
}

/// Two directories side by side (with a secret file beside them), served
/// on a free port of 127.0.0.1.
fn start() -> Served {
    let tmp = tempfile::tempdir().expect("tempdir");
    let train = tmp.path().join("train");
    let val = tmp.path().join("val");
    std::fs::write(tmp.path().join("secret.txt"), SECRET).expect("secret");
    std::fs::create_dir_all(&train).expect("mkdir");
    std::fs::create_dir_all(&val).expect("mkdir");
    write_dir(&train, &["a", "b", "c", "a/b", "..", "d%2e", "e", "f"], 3);
    write_dir(&val, &["a", "z"], 5);
    let app = App::open(Options::new(vec![train, val])).expect("open");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = gulp_serve::run(app, "127.0.0.1:0".parse().expect("addr"), |addr| {
            let _ = tx.send(addr);
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("bound");
    Served { addr, _tmp: tmp }
}

/// Sends `request` as it is and returns the status and the whole answer.
fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let answer = raw_bytes(addr, request);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn raw_bytes(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    stream.write_all(request).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer
}

/// An answer split: status, header lines (names in lower case, as hyper
/// writes them), body bytes.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// GET `target` with extra header lines, the answer split.
fn fetch(addr: SocketAddr, target: &str, extra: &str) -> Answer {
    let bytes = raw_bytes(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n")
            .as_bytes(),
    );
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: bytes[split + 4..].to_vec(),
    }
}

fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    raw(
        addr,
        format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn wait_for_scan(addr: SocketAddr) {
    for _ in 0..600 {
        let (_, page) = get(addr, "/");
        if !page.contains("reading metas") && !page.contains("running (after") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the background scan did not finish");
}

#[test]
fn pages_answer_with_the_directory_numbers() {
    let s = start();
    wait_for_scan(s.addr);
    let (status, page) = get(s.addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains(r#"data-k="items" data-v="8""#), "{page}");
    assert!(page.contains(r#"data-k="frames" data-v="24""#));
    assert!(page.contains(r#"data-k="chunks" data-v="3""#));
    assert!(page.contains("gulp check: <span class=\"ok\">clean</span>"));
    // Histograms of what the index and the files give.
    assert!(
        page.contains(r#"<table class="bars chunk-bytes"><tr>"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<table class="bars item-frames"><tr><th>2–3</th><td class="n">8</td>"#)
    );

    // Filter by class: train's items 0, 2 of each chunk are class-0.
    let (status, page) = get(s.addr, "/d/0/items?class=class-0");
    assert_eq!(status, 200);
    assert!(page.contains(r#"<span id="total" data-v="5">"#), "{page}");
    // Prefix, sort, paging: the URL of the next page keeps the filter.
    let (_, page) = get(s.addr, "/d/0/items?prefix=a&sort=-id&per=1");
    assert!(page.contains(r#"<span id="total" data-v="2">"#), "{page}");
    assert!(page.contains(r#"data-id="a/b""#));
    assert!(page.contains("href=\"/d/0/items?page=2&amp;per=1&amp;prefix=a&amp;sort=-id\""));
    // A meta filter.
    let (_, page) = get(s.addr, "/d/0/items?key=n&value=1");
    assert_eq!(page.matches("class=\"item\"").count(), 3, "{page}");

    // The item page: an id with a slash is an id, and val has "a" too.
    let (status, page) = get(s.addr, "/d/0/item?id=a%2Fb");
    assert_eq!(status, 200);
    assert!(page.contains("<h1>a/b</h1>"));
    let (_, page) = get(s.addr, "/d/0/item?id=a");
    assert!(page.contains(r#"href="/d/1/item?id=a""#), "{page}");
    assert!(page.contains("160×120"));

    let (status, thumb) = get(s.addr, "/d/0/thumb?id=..&frame=2");
    assert_eq!(status, 200);
    assert!(thumb.contains("content-type: image/jpeg"), "{thumb}");
    let (status, _) = get(s.addr, "/d/1/model?frames=2&size=64&resize=96&batch_size=2");
    assert_eq!(status, 200);
}

#[test]
fn nothing_outside_the_served_directories_can_be_read() {
    let s = start();
    let attempts = [
        "/../secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e/secret.txt",
        "/static/..%2f..%2fsecret.txt",
        "/static/../../secret.txt",
        "/d/0/../../secret.txt",
        "/d/0/..%2F..%2Fsecret.txt",
        "/d/0/item?id=../secret.txt",
        "/d/0/item?id=..%2Fsecret.txt",
        "/d/0/item?id=%2E%2E%2Fsecret.txt",
        "/d/0/frame?id=../secret.txt",
        "/d/0/audio?id=../secret.txt",
        "/d/0/audio?id=..",
        "/d/0/thumb?id=../../secret.txt",
        "/d/0/frame?id=/etc/passwd",
        "/d/0/item?id=%2Fetc%2Fpasswd",
        "/d/0/item?id=data_0.gulp",
        "/d/0/frame?id=meta_0.gmeta",
        "/d/..%2f/items",
        "/d/%2e%2e/items",
        "/etc/passwd",
        "//etc/passwd",
        "/d/0/items?prefix=../",
        "http://localhost/../secret.txt",
    ];
    for target in attempts {
        let (status, answer) = get(s.addr, target);
        assert!(
            (400..500).contains(&status) || (status == 200 && !target.contains("secret")),
            "{target}: {status}"
        );
        assert!(!answer.contains(SECRET), "{target} read the secret");
        assert!(!answer.contains("root:"), "{target} read /etc/passwd");
    }
    // The id "..", a real item, is served as an id, not a path.
    let (status, page) = get(s.addr, "/d/0/item?id=..");
    assert_eq!(status, 200);
    assert!(page.contains("<h1>..</h1>"));
}

#[test]
fn bad_requests_answer_4xx_and_the_server_keeps_serving() {
    let s = start();
    let cases = [
        ("/d/99/items", 404),
        ("/d/-1/items", 400),
        ("/d/x/items", 400),
        ("/d/0/items?page=0", 400),
        ("/d/0/items?page=abc", 400),
        ("/d/0/items?page=18446744073709551615&per=500", 400),
        ("/d/0/items?per=0", 400),
        ("/d/0/items?per=100000", 400),
        ("/d/0/items?sort=evil", 400),
        ("/d/0/item", 400),
        ("/d/0/item?id=nope", 404),
        ("/d/0/thumb?id=a&frame=3", 404),
        ("/d/0/thumb?id=a&frame=-1", 400),
        ("/d/0/thumb?id=a&frame=99999999999999999999999", 400),
        ("/d/0/frame?id=a&frame=x", 400),
        ("/nowhere", 404),
    ];
    for (target, want) in cases {
        let (status, _) = get(s.addr, target);
        assert_eq!(status, want, "{target}");
    }
    // A loader configuration that cannot work is reported in the page.
    let (status, page) = get(s.addr, "/d/0/model?crop=nonsense&frames=0");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"model-error\""), "{page}");
    let (status, page) = get(s.addr, "/d/0/model?size=500&crop=center");
    assert_eq!(status, 200);
    assert!(page.contains("does not fit"), "{page}");
    // Not HTTP at all, a method that is not served, a huge header.
    let (status, _) = raw(s.addr, b"\x00\x01garbage\r\n\r\n");
    assert_eq!(status, 400);
    let (status, _) = raw(
        s.addr,
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 405);
    let long = format!(
        "GET /d/0/item?id={} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let (status, _) = raw(s.addr, long.as_bytes());
    assert!((400..500).contains(&status) || status == 0, "{status}");
    let (status, _) = get(s.addr, "/");
    assert_eq!(status, 200);
}

#[test]
fn a_slow_client_does_not_hold_the_others() {
    let s = start();
    // One client sends half a request and waits; another asks for a
    // thumbnail and never reads the answer.
    let mut half = TcpStream::connect(s.addr).expect("connect");
    half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .expect("send");
    let mut idle = Vec::new();
    for _ in 0..8 {
        let mut stream = TcpStream::connect(s.addr).expect("connect");
        stream
            .write_all(b"GET /d/0/thumb?id=a&frame=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("send");
        idle.push(stream);
    }
    for target in ["/", "/d/0/items", "/d/0/item?id=b", "/d/1/thumb?id=z"] {
        let (status, _) = get(s.addr, target);
        assert_eq!(status, 200, "{target}");
    }
    drop(half);
    drop(idle);
}

#[test]
fn the_lint_report_is_shown_escaped_and_a_missing_one_is_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("d");
    std::fs::create_dir_all(&dir).expect("mkdir");
    write_dir(&dir, &["a", "b"], 2);
    let lint = tmp.path().join("lint.json");
    std::fs::write(&lint, r#"{"findings":[{"id":"a","kind":"<dark>"}]}"#).expect("lint");
    let options = Options {
        lint: Some(lint),
        ..Options::new(vec![dir.clone()])
    };
    let app = App::open(options).expect("open");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = gulp_serve::run(app, "127.0.0.1:0".parse().expect("addr"), |addr| {
            let _ = tx.send(addr);
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("bound");
    let (status, page) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<section id=\"lint\">"), "{page}");
    assert!(
        page.contains("&quot;kind&quot;: &quot;&lt;dark&gt;&quot;"),
        "{page}"
    );

    let missing = Options {
        lint: Some(tmp.path().join("nope.json")),
        ..Options::new(vec![dir])
    };
    let err = App::open(missing).err().expect("an error");
    assert!(err.to_string().contains("nope.json"), "{err}");
}

/// Serves the real ingest (8 fps, 16 kHz mono sound) of a folder of two
/// real encodes: `beeps/beep.mp4` (AAC, beeps at 0.5 s and 1.5 s) and
/// `beeps/mute.mp4` (no audio stream); beside it, a directory without
/// sound. Returns the server, the directory with sound, and the ids.
fn start_with_sound() -> (Served, std::path::PathBuf, String, String) {
    use gulp_ingest::video::AudioRequest;
    use gulp_ingest::{AdapterKind, IngestRequest, ingest};
    use gulp_test_support::media::FlashBeep;

    let tmp = tempfile::tempdir().expect("tempdir");
    let videos = tmp.path().join("videos");
    std::fs::create_dir_all(videos.join("beeps")).expect("mkdir");
    FlashBeep::mp4(2.0, &[0.5, 1.5]).write(&videos.join("beeps/beep.mp4"));
    FlashBeep {
        sound: false,
        ..FlashBeep::mp4(2.0, &[1.0])
    }
    .write(&videos.join("beeps/mute.mp4"));
    let sound = tmp.path().join("sound");
    let mut request = IngestRequest::new(AdapterKind::VideoFolder, vec![videos], sound.clone());
    request.options.fsync = false;
    request.options.frames.frame_rate = Some(8.0);
    request.options.frames.short_edge = Some(64);
    request.options.frames.audio = Some(AudioRequest {
        sample_rate: 16000,
        channels: 1,
    });
    let dataset = request.dataset().expect("dataset");
    let report = ingest(&dataset, &sound, &request.options, &mut |_| {}).expect("ingest");
    assert_eq!(report.items, 2, "{report:?}");
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).expect("mkdir");
    write_dir(&plain, &["a"], 1);

    let dir = gulp_io::GulpDirectory::open(&sound).expect("open");
    let id_of = |stem: &str| {
        dir.ids()
            .find(|id| id.contains(stem))
            .unwrap_or_else(|| panic!("no id with {stem}"))
            .to_owned()
    };
    let (beep, mute) = (id_of("beep"), id_of("mute"));
    let app = App::open(Options::new(vec![sound.clone(), plain])).expect("open");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = gulp_serve::run(app, "127.0.0.1:0".parse().expect("addr"), |addr| {
            let _ = tx.send(addr);
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("bound");
    (Served { addr, _tmp: tmp }, sound, beep, mute)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

#[test]
fn an_item_with_sound_is_played_from_a_wav_of_its_track() {
    let (s, dir, beep, mute) = start_with_sound();
    let gulp = gulp_io::GulpDirectory::open(&dir).expect("open");
    let item = gulp.item(&beep).expect("item");
    let track = item
        .audio_track()
        .expect("the beep video has sound")
        .clone();
    let pcm = gulp
        .reader_for(&beep)
        .and_then(|r| r.audio(&beep, &track))
        .expect("pcm")
        .into_owned();
    assert_eq!((track.sample_rate, track.channels), (16000, 1));
    assert_eq!(pcm.len() as u64, track.samples * 2);
    let q = |id: &str| serde_urlencoded::to_string([("id", id)]).expect("query");

    // The item page: an audio element on the WAV's route, the frames'
    // times and the sound's start for the player.
    let (status, page) = get(s.addr, &format!("/d/0/item?{}", q(&beep)));
    assert_eq!(status, 200);
    let src = format!("src=\"/d/0/audio?{}\"", q(&beep));
    assert!(
        page.contains("<audio id=\"audio\" controls") && page.contains(&src),
        "{page}"
    );
    let times = item
        .frame_times
        .as_ref()
        .expect("ingest writes frame times");
    let list: Vec<String> = times
        .to_list(item.frame_info.len())
        .iter()
        .map(f64::to_string)
        .collect();
    assert!(
        page.contains(&format!("data-times=\"[{}]\"", list.join(","))),
        "{page}"
    );
    assert!(page.contains(&format!("data-audio-start=\"{}\"", track.start)));
    assert!(page.contains("16000 Hz, 1 channel, 2.00 s"), "{page}");
    // A video without sound says so; an item of a directory ingested
    // without sound has no word of it.
    let (_, page) = get(s.addr, &format!("/d/0/item?{}", q(&mute)));
    assert!(
        page.contains("id=\"no-sound\"") && !page.contains("<audio"),
        "{page}"
    );
    let (_, page) = get(s.addr, "/d/1/item?id=a");
    assert!(!page.contains("<audio") && !page.contains("no-sound"));
    assert!(!page.contains("data-times"), "{page}");

    // The WAV: its header says 16 kHz mono 16-bit, its length is the
    // header's and the samples', its samples are the record's.
    let wav = fetch(s.addr, &format!("/d/0/audio?{}", q(&beep)), "");
    assert_eq!(wav.status, 200);
    assert_eq!(wav.header("content-type"), Some("audio/wav"));
    assert_eq!(wav.header("accept-ranges"), Some("bytes"));
    let len = 44 + pcm.len();
    assert_eq!(wav.header("content-length"), Some(len.to_string().as_str()));
    assert_eq!(wav.body.len(), len);
    let b = &wav.body;
    assert_eq!(
        (&b[0..4], &b[8..16], &b[36..40]),
        (&b"RIFF"[..], &b"WAVEfmt "[..], &b"data"[..])
    );
    assert_eq!(u32_at(b, 4) as usize, len - 8);
    assert_eq!(u16::from_le_bytes([b[20], b[21]]), 1, "PCM");
    assert_eq!(u16::from_le_bytes([b[22], b[23]]), 1, "channels");
    assert_eq!(u32_at(b, 24), 16000);
    assert_eq!(u32_at(b, 28), 32000, "bytes per second");
    assert_eq!(u16::from_le_bytes([b[34], b[35]]), 16, "bits");
    assert_eq!(u32_at(b, 40) as usize, pcm.len());
    assert_eq!(&b[44..], &pcm[..]);
    // The beeps are there: 0.6 of full scale at 0.5 s, silence at 1.0 s.
    let peak = |ms: usize| {
        let at = ms * 16;
        pcm[at * 2..(at + 800) * 2]
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]).unsigned_abs())
            .max()
            .unwrap_or(0)
    };
    assert!(peak(520) > 16000, "{}", peak(520));
    assert!(peak(1000) < 500, "{}", peak(1000));

    // Ranges, as a browser asks for them to seek.
    let part = fetch(
        s.addr,
        &format!("/d/0/audio?{}", q(&beep)),
        "Range: bytes=40-99\r\n",
    );
    assert_eq!(part.status, 206);
    assert_eq!(
        part.header("content-range"),
        Some(format!("bytes 40-99/{len}").as_str())
    );
    assert_eq!(part.header("content-length"), Some("60"));
    assert_eq!(part.body, b[40..100]);
    let tail = fetch(
        s.addr,
        &format!("/d/0/audio?{}", q(&beep)),
        "Range: bytes=-10\r\n",
    );
    assert_eq!((tail.status, &tail.body[..]), (206, &b[len - 10..]));
    let past = fetch(
        s.addr,
        &format!("/d/0/audio?{}", q(&beep)),
        &format!("Range: bytes={len}-\r\n"),
    );
    assert_eq!(past.status, 416);
    assert_eq!(
        past.header("content-range"),
        Some(format!("bytes */{len}").as_str())
    );

    // No track, no item, no directory: 404 with a reason.
    for target in [
        format!("/d/0/audio?{}", q(&mute)),
        "/d/1/audio?id=a".to_owned(),
        "/d/0/audio?id=nope".to_owned(),
        "/d/7/audio?id=a".to_owned(),
    ] {
        let answer = fetch(s.addr, &target, "");
        assert_eq!(answer.status, 404, "{target}");
        let reason = String::from_utf8_lossy(&answer.body).into_owned();
        assert!(
            reason.contains("no sound")
                || reason.contains("no item")
                || reason.contains("no directory"),
            "{target}: {reason}"
        );
    }
    assert_eq!(fetch(s.addr, "/d/0/audio", "").status, 400);
}
