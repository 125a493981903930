"""gulp.Writer: items from numpy frames and JPEG bytes, read back by gulp and
by the real gulpio2 0.0.4; labels; ids already there; bad input; what a
SIGKILL leaves (checked with the real `gulp recover` and `gulp check`)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import gulp
import gulpio2
import gulpio2.utils
from conftest import ListAdapter, ffmpeg_frames
from test_read_compat import assert_frames_equal

GULP = os.path.join(os.path.dirname(sys.executable), "gulp")


def jpeg(frame, quality=80):
    return gulp._gulp.encode_jpeg(frame, quality)


def chunk_ids(path):
    """{chunk number: [ids]} of a directory, as gulpio2 sees it."""
    gd = gulpio2.GulpDirectory(path)
    return {n: list(c.meta_dict) for n, c in gd.chunk_objs_lookup.items()}


def names(path):
    return sorted(os.listdir(path))


@pytest.fixture(scope="module")
def clip():
    """8 real RGB frames of 96x128 and 5 gray ones of 60x80."""
    return (np.stack(ffmpeg_frames("testsrc2", (128, 96), 8)),
            np.stack(ffmpeg_frames("mandelbrot", (80, 60), 5, pix_fmt="gray")))


def test_arrays_and_jpeg_bytes_round_trip_in_gulp_and_gulpio2(tmp_path, clip):
    rgb, gray = clip
    other = ffmpeg_frames("smptebars", (64, 48), 3)
    jpegs = [jpeg(f) for f in ffmpeg_frames("rgbtestsrc", (40, 30), 4)]
    items = [
        ("video", rgb, {"label": "dog", "caption": "a dog"}),          # [T, H, W, 3]
        ("gray", gray, {"label": "cat"}),                             # [T, H, W]
        ("list", [rgb[0], other[1], gray[2]], {"label": "dog"}),      # sizes differ
        ("strided", rgb[:, ::2, 1::2], {"n": 3}),                     # not contiguous
        ("jpegs", jpegs, {"label": "bird", "nested": [1, None]}),     # bytes as given
        (7, [bytearray(jpegs[0]), memoryview(jpegs[1])], None),       # int id, buffers
    ]
    out = str(tmp_path / "out")
    with gulp.Writer(out, items_per_chunk=4, threads=2) as w:
        for id_, frames, meta in items:
            assert w.add(id_, frames, meta) is True
    assert w.closed
    report = w.close()  # the same report again
    assert (report["items"], report["frames"], report["chunks"]) == (6, 8 + 5 + 3 + 8 + 4 + 2, [0, 1])
    assert os.fspath(report["label_file"]) == os.path.join(out, "label2idx.json")
    with open(report["label_file"]) as f:
        assert json.load(f) == {"dog": 0, "cat": 1, "bird": 2}
    assert chunk_ids(out) == {0: ["video", "gray", "list", "strided"], 1: ["jpegs", "7"]}

    pixels = {
        "video": list(rgb), "gray": list(gray), "list": [rgb[0], other[1], gray[2]],
        "strided": list(np.ascontiguousarray(rgb[:, ::2, 1::2])),
    }
    metas = {
        "video": {"label": "dog", "caption": "a dog", "idx": 0}, "gray": {"label": "cat", "idx": 1},
        "list": {"label": "dog", "idx": 0}, "strided": {"n": 3},
        "jpegs": {"label": "bird", "nested": [1, None], "idx": 2}, "7": {},
    }
    ours, theirs = gulp.GulpDirectory(out), gulpio2.GulpDirectory(out)
    assert sorted(ours.ids()) == sorted(theirs.merged_meta_dict) == sorted(metas)
    for id_, want in metas.items():
        frames, meta = theirs[id_]
        assert meta == want == ours.meta(id_)
        assert_frames_equal(ours[id_][0], frames)
        raw = [bytes(b) for b in ours.raw(id_)]
        if id_ in pixels:
            # gulpio2's own encoding of the same frames: the same bytes.
            assert raw == [gulpio2.utils.img_to_jpeg_bytes(np.ascontiguousarray(p))
                           for p in pixels[id_]]
        else:
            assert raw == (jpegs if id_ == "jpegs" else jpegs[:2])
    assert gulp.check(out, decode=True).is_clean


def test_quality_subsampling_and_msgpack(tmp_path, clip):
    rgb, _ = clip
    out = str(tmp_path / "out")
    with gulp.Writer(out, quality=50, subsampling="420", meta_format="msgpack") as w:
        w.add("a", rgb[:2])
    with open(os.path.join(out, "meta_0.gmeta"), "rb") as f:
        assert not f.read(1).startswith(b"{")
    raw = [bytes(b) for b in gulp.GulpDirectory(out).raw("a")]
    assert [header(j) for j in raw] == [(16, 0x22)] * 2  # quality 50, 4:2:0
    with gulp.Writer(str(tmp_path / "default")) as w:
        w.add("a", rgb[:1])
    raw = bytes(gulp.GulpDirectory(str(tmp_path / "default")).raw("a")[0])
    assert header(raw) == (3, 0x11)  # quality 90, 4:4:4
    with pytest.raises(gulp.InvalidInputError, match="subsampling must be one of 'auto', '444', '420'"):
        gulp.Writer(str(tmp_path / "x"), subsampling="422")
    with pytest.raises(gulp.InvalidInputError, match="quality must be 1 to 100, not 0"):
        gulp.Writer(str(tmp_path / "x"), quality=0)
    with pytest.raises(gulp.InvalidInputError, match="on_exists must be one of 'error', 'skip'"):
        gulp.Writer(str(tmp_path / "x"), on_exists="replace")


def header(jpeg):
    """The first luma quantizer (16 at quality 50, 3 at 90) and the luma
    sampling factors (0x11: 4:4:4, 0x22: 4:2:0) of a baseline JPEG."""
    dqt = jpeg.index(b"\xff\xdb")
    sof = jpeg.index(b"\xff\xc0")
    return jpeg[dqt + 5], jpeg[sof + 11]


def test_labels_are_numbered_after_the_directorys(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "label2idx.json").write_text('{"cat": 0, "zebra": 4}')
    frame = np.zeros((8, 8, 3), np.uint8)
    with gulp.Writer(out, items_per_chunk=2) as w:
        w.add("a", [frame], {"label": "dog"})
        w.add("b", [frame], {"label": "cat", "idx": 0})       # agrees: kept
        w.add("c", [frame], {"label": "ant"})
        w.add("d", [frame], {"label": 3})                      # not a string: left alone
        w.add("e", [frame], ["not", "a", "dict"])
        with pytest.raises(gulp.InvalidInputError) as e:
            w.add("f", [frame], {"label": "dog", "idx": 9})
    assert str(e.value) == (f'{out}: id "f": its meta has "idx": 9, but label "dog" is 5 in '
                            "label2idx.json (turn label numbering off to keep your own numbers)")
    assert (out / "label2idx.json").read_text() == '{"cat": 0, "zebra": 4, "dog": 5, "ant": 6}'
    gd = gulp.GulpDirectory(str(out))
    assert [gd.meta(i) for i in "abcde"] == [
        {"label": "dog", "idx": 5}, {"label": "cat", "idx": 0}, {"label": "ant", "idx": 6},
        {"label": 3}, ["not", "a", "dict"]]
    # labels=False: metas as given, no label file.
    other = tmp_path / "off"
    with gulp.Writer(other, labels=False) as w:
        w.add("f", [frame], {"label": "dog", "idx": 9})
    assert names(other) == ["data_0.gulp", "meta_0.gmeta"]
    assert gulp.GulpDirectory(str(other)).meta("f") == {"label": "dog", "idx": 9}


def test_an_existing_directory_gets_new_chunks_and_its_ids_raise_or_are_skipped(tmp_path, clip):
    rgb, _ = clip
    out = str(tmp_path / "out")
    with gulp.Writer(out, items_per_chunk=2) as w:
        for id_ in "abc":
            w.add(id_, rgb[:1])
    with gulp.Writer(out, items_per_chunk=2) as w:
        with pytest.raises(gulp.DuplicateIdError) as e:
            w.add("b", rgb[:1])
        assert isinstance(e.value, ValueError)
        assert str(e.value) == f'{out}: id "b" is already in the directory (on_exists "skip" skips such ids)'
        w.add("d", rgb[:1])
    with gulp.Writer(out, items_per_chunk=2, on_exists="skip") as w:
        assert w.add("a", rgb[:1]) is False
        assert w.add("e", rgb[:1]) is True
        assert w.add("d", rgb[:1]) is False
        # Given twice in one session: an error whatever on_exists says.
        with pytest.raises(gulp.DuplicateIdError, match='id "e" was given twice'):
            w.add("e", rgb[:1])
    assert (w.report["items"], w.report["already_present"], w.report["chunks"]) == (1, 2, [3])
    assert chunk_ids(out) == {0: ["a", "b"], 1: ["c"], 2: ["d"], 3: ["e"]}
    assert gulp.check(out).is_clean


BAD = [
    ("float", np.zeros((2, 8, 8, 3), np.float32), "", "frames must be uint8, not float32"),
    ("rgba", np.zeros((2, 8, 8, 4), np.uint8), "", "4 channels; frames must have 1 (gray) or 3 (RGB)"),
    ("2d", np.zeros((8, 8), np.uint8), "",
     "a 2-d array: frames are [T, H, W, 3], [T, H, W] (gray) or a sequence of [H, W, 3] / [H, W] arrays"),
    ("one-rgb", np.zeros((8, 8, 3), np.uint8), "",
     "a 3-d array is gray frames [T, H, W], and this one's last axis is 3: one RGB frame is "
     "frame[None] or [frame]"),
    ("zero", np.zeros((0, 8, 8, 3), np.uint8), "", "no frames"),
    ("empty", [], "", "no frames"),
    ("not-jpeg", "JPEG+PNG", " frame 1", "not a JPEG stream (no start-of-image marker at byte 0)"),
    ("cut-jpeg", "CUT", " frame 0", "truncated JPEG: no end-of-image marker at the end (100 bytes)"),
    ("float-frame", [np.zeros((8, 8, 3), np.uint8), np.zeros((8, 8, 3))], " frame 1",
     "frames must be uint8, not float64"),
    ("mixed", "MIXED", " frame 1", "an item's frames are all arrays or all JPEG bytes, not both"),
    ("none", [None], " frame 0", "each frame is a uint8 array or JPEG bytes, not NoneType"),
    ("one-jpeg", "ONE", "", "frames are a sequence (one JPEG is [jpeg]) or a uint8 array, not bytes"),
    ("number", 3, "",
     "frames are a uint8 array [T, H, W, 3] or [T, H, W], or a sequence of arrays or of JPEG bytes, not int"),
    ("4d-frame", [np.zeros((1, 8, 8, 3), np.uint8)], " frame 0", "a 4-d array: a frame is [H, W, 3] or [H, W] (gray)"),
]


def bad_frames(kind):
    good = jpeg(np.full((16, 16, 3), 90, np.uint8))
    made = {"JPEG+PNG": [good, b"\x89PNG\r\n\x1a\n"], "CUT": [good[:100]],
            "MIXED": [np.zeros((8, 8, 3), np.uint8), good], "ONE": good}
    return made[kind] if isinstance(kind, str) else kind


@pytest.mark.parametrize("id_,frames,where,reason", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_a_value_error_naming_id_and_frame_and_writes_nothing(tmp_path, id_, frames,
                                                                          where, reason):
    out = str(tmp_path / "out")
    with gulp.Writer(out) as w:
        with pytest.raises(ValueError) as e:
            w.add(id_, bad_frames(frames), {"label": "never numbered"})
        assert isinstance(e.value, gulp.InvalidInputError)
        assert str(e.value) == f'{out}: id "{id_}"{where}: {reason}'
        # The id is still free.
        assert w.add(id_, [jpeg(np.zeros((8, 8, 3), np.uint8))]) is True
    assert w.report["items"] == 1
    assert names(out) == ["data_0.gulp", "meta_0.gmeta"]  # no label file either
    assert gulp.GulpDirectory(out).meta(id_) == {}


def test_bad_ids_and_metas(tmp_path):
    out = str(tmp_path / "out")
    frame = [np.zeros((8, 8), np.uint8)]
    with gulp.Writer(out) as w:
        with pytest.raises(gulp.GulpTypeError, match="ids are str or int, not float"):
            w.add(1.5, frame)
        with pytest.raises(gulp.InvalidInputError, match="meta of id \"x\": a object cannot be stored"):
            w.add("x", frame, {"f": object()})
        w.add("x", frame, {"n": np.int64(3), "a": np.arange(2)})
    assert gulp.GulpDirectory(out).meta("x") == {"n": 3, "a": [0, 1]}


class _ArrayLike:
    """What np.asarray takes (a torch tensor, a PIL image, ...)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


def test_array_likes_are_taken_through_numpy(tmp_path, clip):
    rgb, _ = clip
    out = str(tmp_path / "out")
    with gulp.Writer(out) as w:
        w.add("t", _ArrayLike(rgb[:3]))
    assert gulp.GulpDirectory(out).frame_count("t") == 3


def test_an_exception_in_the_block_commits_what_was_added(tmp_path, clip):
    """As webdataset's ShardWriter and MosaicML's MDSWriter close their
    shards: every item add() took is whole, so it is committed; running
    again with on_exists="skip" goes on."""
    rgb, _ = clip
    out = str(tmp_path / "out")
    with pytest.raises(ZeroDivisionError):
        with gulp.Writer(out, items_per_chunk=10) as w:
            w.add("a", rgb[:2])
            w.add("b", rgb[:2])
            1 / 0
    assert w.closed and w.report["items"] == 2
    assert chunk_ids(out) == {0: ["a", "b"]}
    with gulp.Writer(out, on_exists="skip") as w:
        assert [w.add(i, rgb[:2]) for i in "abc"] == [False, False, True]
    assert chunk_ids(out) == {0: ["a", "b"], 1: ["c"]}


def test_abort_discards_the_chunk_being_filled(tmp_path, clip):
    rgb, _ = clip
    out = str(tmp_path / "out")
    w = gulp.Writer(out, items_per_chunk=2)
    for id_ in "abc":
        w.add(id_, rgb[:1])
    w.abort()  # a and b make a chunk: written and committed; c is discarded
    assert w.closed
    assert names(out) == ["data_0.gulp", "meta_0.gmeta"]
    with pytest.raises(gulp.InvalidInputError, match="the writer is closed"):
        w.add("d", rgb[:1])
    with pytest.raises(gulp.InvalidInputError, match="the writer is closed"):
        w.close()


def test_the_directory_is_locked_while_open(tmp_path):
    out = str(tmp_path / "out")
    with gulp.Writer(out) as w:
        with pytest.raises(gulp.IngestError,
                           match="another ingest or writer is writing into this directory"):
            gulp.Writer(out)
        done = subprocess.run([GULP, "recover", out], capture_output=True, text=True)
        assert done.returncode == 2
        assert "an ingest is writing into this directory" in done.stderr
        w.add("a", [np.zeros((8, 8), np.uint8)])
    assert subprocess.run([GULP, "recover", out], capture_output=True).returncode == 0


def test_gulp_ingestor_writes_gulpio2s_chunks_through_the_writer(tmp_path, sample_items):
    """An item without frames leaves its chunk shorter, in gulp as in
    gulpio2: the same files, byte for byte."""
    data = [dict(i) for i in sample_items]
    data.insert(3, {"id": "empty", "meta": {}, "frames": []})
    adapter = ListAdapter(data)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    gulp.GulpIngestor(adapter, ours, 2, 2)()
    gulpio2.GulpIngestor(adapter, theirs, 2, 1)()
    assert names(ours) == names(theirs)
    for name in names(ours):
        with open(os.path.join(ours, name), "rb") as a, open(os.path.join(theirs, name), "rb") as b:
            if name.endswith(".gulp"):
                assert a.read() == b.read(), name
            else:
                assert json.load(a) == json.load(b), name
    assert chunk_ids(ours)[1] == ["102"]  # [102, empty]
    # Ids already there: refused before anything of them is written.
    with pytest.raises(gulp.DuplicateIdError, match='id "100" is already in the directory'):
        gulp.GulpIngestor(adapter, ours, 2, 1)()
    assert names(ours) == names(theirs)


def test_gulp_ingestor_discards_the_chunk_being_filled_on_an_exception(tmp_path, sample_items):
    class Failing(ListAdapter):
        def iter_data(self, slice_element=None):
            for k, item in enumerate(super().iter_data(slice_element)):
                if item["id"] == 103:
                    raise RuntimeError("adapter failed")
                yield item

    out = str(tmp_path / "out")
    with pytest.raises(RuntimeError, match="adapter failed"):
        gulp.GulpIngestor(Failing(sample_items), out, 2, 1)()
    # Chunks 0 and 1 (ids 100-103) are slices [0:2], [2:4]: 103 fails in chunk 1.
    assert chunk_ids(out) == {0: ["100", "101"]}
    assert gulp.check(out).is_clean


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import gulp

    out, per_chunk = sys.argv[1], int(sys.argv[2])
    frames = np.random.default_rng(0).integers(0, 256, (4, 96, 128, 3), dtype=np.uint8)
    with gulp.Writer(out, items_per_chunk=per_chunk, threads=2) as w:
        for i in range(1_000_000):
            w.add(f"item-{i:07d}", frames, {"label": f"class-{i % 7}", "i": i})
""")


def test_a_writer_killed_mid_write_leaves_exactly_its_committed_chunks(tmp_path):
    out = str(tmp_path / "out")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    per_chunk = 5
    child = subprocess.Popen([sys.executable, str(script), out, str(per_chunk)])
    try:
        deadline = time.monotonic() + 120
        while sum(n.startswith("meta_") for n in (os.listdir(out) if os.path.isdir(out) else [])) < 4:
            assert child.poll() is None, "the writer exited"
            assert time.monotonic() < deadline, "no 4 chunks in 120 s"
            time.sleep(0.005)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    left = names(out)
    # The real commands, as a user runs them.
    recover = subprocess.run([GULP, "recover", out], capture_output=True, text=True)
    assert recover.returncode == 0, recover.stdout + recover.stderr
    check = subprocess.run([GULP, "check", out, "--decode"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr

    chunks = chunk_ids(out)
    committed = sorted(chunks)
    # Commits happen in order: chunks 0..k-1, each with exactly its items.
    assert committed == list(range(len(committed))) and len(committed) >= 4
    for k in committed:
        assert chunks[k] == [f"item-{i:07d}" for i in range(k * per_chunk, (k + 1) * per_chunk)]
    gd = gulp.GulpDirectory(out)
    assert len(gd) == len(committed) * per_chunk
    assert names(out) == sorted(
        [f"data_{k}.gulp" for k in committed] + [f"meta_{k}.gmeta" for k in committed]
        + ["label2idx.json"])
    # Every committed idx is in the label file.
    with open(os.path.join(out, "label2idx.json")) as f:
        labels = json.load(f)
    for id_ in gd.ids():
        meta = gd.meta(id_)
        assert labels[meta["label"]] == meta["idx"] == int(id_[5:]) % 7
    # What the kill left, if anything, was temporary files (recover cleared them).
    assert all(n.startswith(".gulp-tmp.") for n in set(left) - set(names(out))), left
