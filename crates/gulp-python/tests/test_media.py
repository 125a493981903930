"""Time, sound and text from real encodes (docs/format.md §8, docs/loader.md):
videos with white flashes and 1 kHz beeps at known times (mp4/AAC,
webm/Opus, an audio stream that starts after the video, a variable frame
rate), gulped with their sound; the clip loader in seconds gives frames,
times, sound and texts that agree with each other and with the events."""

import json
import os
import subprocess

import numpy as np
import pytest

import gulp

EVENTS = (1.0, 2.5)
FLASH = 0.1


def encode(path, container="mp4", fps=25, seconds=4.0, delay=0.0, vfr=False, sound=True):
    """A test pattern with a white frame and a beep from each event for
    0.1 s (the beep moved back by `delay`, the audio stream forward)."""
    on = "+".join(f"between(t,{t},{t + FLASH})" for t in EVENTS)
    beeps = "+".join(f"between(t,{t - delay},{t - delay + FLASH})" for t in EVENTS)
    vf = f"drawbox=x=0:y=0:w=iw:h=ih:color=white:t=fill:enable='{on}'"
    if vfr:
        vf += ",select='not(between(t,1.2,2.2))+not(mod(n,4))'"
    cmd = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
           f"testsrc2=size=96x64:rate={fps}:duration={seconds}"]
    if sound:
        if delay:
            cmd += ["-itsoffset", str(delay)]
        cmd += ["-f", "lavfi", "-i",
                f"aevalsrc='0.6*sin(2*PI*1000*t)*({beeps})':s=48000:d={seconds - delay}"]
    cmd += ["-vf", vf, "-pix_fmt", "yuv420p"]
    if vfr:
        cmd += ["-fps_mode", "vfr"]
    if container == "mp4":
        cmd += ["-c:v", "libx264", "-preset", "ultrafast"] + (["-c:a", "aac"] if sound else [])
    else:
        cmd += ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"]
        cmd += ["-c:a", "libopus"] if sound else []
    if not sound:
        cmd += ["-an"]
    subprocess.run(cmd + [str(path)], check=True)


@pytest.fixture(scope="module")
def gulped(tmp_path_factory):
    """Four videos with sound and one without, gulped through a manifest
    with their sound at 16 kHz and captions; and the manifest."""
    root = tmp_path_factory.mktemp("media")
    videos = {
        "aac.mp4": {},
        "opus.webm": {"container": "webm"},
        "late.mp4": {"delay": 0.5},
        "vfr.mp4": {"vfr": True, "fps": 30},
        "silent.mp4": {"sound": False},
    }
    for name, options in videos.items():
        encode(root / name, **options)
    manifest = root / "clips.jsonl"
    with open(manifest, "w") as f:
        for name in videos:
            f.write(json.dumps({"path": name, "caption": f"the {name} clip"}) + "\n")
    out = root / "gulped"
    report = gulp.ingest("manifest", manifest, output=out, audio=True, audio_rate=16000)
    assert report["items"] == len(videos) and not report["skipped"], report
    return out


def onsets(batch, k, fps):
    """Clip k's first white frame's time and its beep's onset (seconds)."""
    frames = batch.frames[k].astype(np.float32).mean(axis=(1, 2, 3))
    white = np.flatnonzero(frames > 200)
    sound = np.abs(batch.audio[k, 0])
    loud = np.flatnonzero(sound > 0.3)
    flash = batch.times[k, white[0]] if len(white) else None
    beep = batch.times[k, 0] + loud[0] / 16000 if len(loud) else None
    return flash, beep


def test_frames_and_sound_agree_on_every_encode(gulped):
    fps = 10
    loader = gulp.ClipLoader(gulped, frames=30, fps=fps, sampling="window", resize=None,
                             size=(64, 96), crop="center", flip=False, batch_size=8,
                             shuffle=False, drop_last=False, audio=True, sample_rate=16000,
                             texts="caption")
    batch = next(iter(loader))
    assert batch.audio.shape == (5, 1, 48000) and batch.times.shape == (5, 30)
    for k, id_ in enumerate(batch.ids):
        # A centred 3 s window of a 4 s item: from 0.5 s, every 0.1 s.
        assert np.allclose(batch.times[k], 0.5 + np.arange(30) / fps, atol=0.05), id_
        flash, beep = onsets(batch, k, fps)
        assert flash is not None, id_
        # The first frame that shows the flash is within one frame of it.
        assert EVENTS[0] - 1e-6 <= flash < EVENTS[0] + 1 / fps, (id_, flash)
        if id_ == "silent.mp4":
            assert not batch.has_audio[k] and not batch.audio[k].any()
            continue
        assert batch.has_audio[k], id_
        # The beep starts with the flash: within one frame interval of the
        # frame that shows it (AAC's priming is hidden by its edit list).
        assert abs(beep - EVENTS[0]) < 1 / fps, (id_, beep)
        assert abs(beep - flash) < 1 / fps, (id_, beep, flash)
    assert batch.texts == [f"the {i} clip" for i in batch.ids]


def test_times_follow_a_variable_frame_rate(gulped):
    gd = gulp.GulpDirectory(gulped)
    # Stored at the source's rate: 30 fps, then one frame in four from 1.2
    # to 2.2 s (0.133 s apart), then 30 fps again.
    loader = gulp.ClipLoader(gulped, ids=["vfr.mp4"], frames=8, fps=4, sampling="window",
                             resize=None, size=(64, 96), crop="center", flip=False,
                             batch_size=1, shuffle=False, drop_last=False)
    batch = next(iter(loader))
    times = batch.times[0]
    assert np.allclose(np.diff(times), 0.25)
    frames = len(gd["vfr.mp4"][0])
    assert frames < 4 * 30  # frames were dropped by the select filter
    # Each frame given is the one on screen at its time: within the
    # dropped span, frames are 4 source frames apart.
    idx = batch.indices[0]
    assert all(a <= b for a, b in zip(idx, idx[1:]))
    inside = [i for i, t in zip(idx, times) if 1.3 < t < 2.1]
    assert inside and len(set(inside)) == len(inside)


def test_segments_give_their_own_text(tmp_path, gulped):
    src = gulped.parent
    manifest = tmp_path / "spans.csv"
    manifest.write_text(
        "path,start,end,caption\n"
        f"{src}/aac.mp4,0.5,1.5,the flash\n"
        f"{src}/aac.mp4,2.0,3.5,the second flash\n")
    out = tmp_path / "videos"
    gulp.ingest("manifest", manifest, output=out, segments=True, frame_rate=8, audio=True)
    loader = gulp.ClipLoader(out, segments=gulp.Segments.manifest(), frames=4, fps=4,
                             sampling="window", resize=None, size=(64, 96), crop="center",
                             flip=False, batch_size=4, shuffle=False, drop_last=False,
                             texts="caption", audio=True)
    batch = next(iter(loader))
    assert batch.texts == ["the flash", "the second flash"]
    # Each clip inside its segment (seconds, by the item's frame times).
    assert 0.5 - 1e-6 <= batch.times[0, 0] and batch.times[0, -1] < 1.5
    assert 2.0 - 1e-6 <= batch.times[1, 0] and batch.times[1, -1] < 3.5
    assert batch.audio.shape == (2, 1, 16000)


def test_a_resumed_loader_gives_the_same_sound(gulped):
    def make():
        return gulp.ClipLoader(gulped, frames=4, fps=8, sampling="window", resize=None,
                               size=(64, 96), crop="random", batch_size=2, shuffle=True,
                               seed=5, audio=True, threads=2)
    whole = [(b.ids, b.audio.copy(), b.times.copy()) for b in make()]
    first = make()
    it = iter(first)
    next(it)
    state = first.state_dict()
    del it
    resumed = make()
    resumed.load_state_dict(state)
    rest = [(b.ids, b.audio.copy(), b.times.copy()) for b in resumed]
    assert len(rest) == len(whole) - 1
    for (ia, aa, ta), (ib, ab, tb) in zip(rest, whole[1:]):
        assert ia == ib and np.array_equal(aa, ab) and np.array_equal(ta, tb)


def test_gulpio2_reads_a_directory_with_times_and_sound(gulped):
    gulpio2 = pytest.importorskip("gulpio2")
    gd = gulpio2.GulpDirectory(str(gulped))
    ours = gulp.GulpDirectory(gulped)
    for id_ in ours.ids():
        frames, meta = gd[id_]
        ours_frames, ours_meta = ours[id_]
        assert meta == ours_meta and len(frames) == len(ours_frames) > 0
        assert all(np.array_equal(a, b) for a, b in zip(frames, ours_frames))
    # The meta files hold the times and the sound records gulpio2 ignores.
    text = open(os.path.join(gulped, "meta_0.gmeta")).read()
    assert '"frame_times"' in text and '"audio"' in text
