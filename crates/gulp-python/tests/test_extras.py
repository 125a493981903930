"""What gulpio2 lacks: decoding options, raw views, gulp.check, gulp.ingest
with the built-in adapters (real ffmpeg), and gulp.utils against gulpio2's."""

import gc
import json
import os
import subprocess

import numpy as np
import pytest

import gulp
import gulp.utils
import gulpio2
import gulpio2.utils
from conftest import ffmpeg_frames


def test_scale_and_crop(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    full = gd.read("100")  # 120x160 frames
    assert full[0].shape == (120, 160, 3)
    half = gd.read("100", dct_scale="1/2")
    assert half[0].shape == (60, 80, 3)
    # An int is the least short edge: 3/8 of 120 rows = 45 >= 40.
    assert gd.read("100", [0], dct_scale=40)[0].shape == (45, 60, 3)
    # min_size is the least (height, width): 5/8 gives 75x100.
    assert gd.read("100", [0], min_size=(50, 100))[0].shape == (75, 100, 3)
    with pytest.raises(gulp.InvalidInputError):
        gd.read("100", [0], dct_scale="1/2", min_size=(50, 100))
    # A region of the full-size frame is exactly that window of the full decode.
    region = gd.read("100", [1], region=(16, 8, 64, 48))[0]
    np.testing.assert_array_equal(region, full[1][8:56, 16:80])
    # Region coordinates are in the scaled frame.
    both = gd.read("100", [1], dct_scale="1/2", region=(8, 4, 32, 24))[0]
    np.testing.assert_array_equal(both, half[1][4:28, 8:40])
    # The old names (scale= and crop=, which mean other things in ClipLoader)
    # still work, with a warning; a (width, height) scale is min_size's pair.
    with pytest.warns(DeprecationWarning, match="dct_scale"):
        np.testing.assert_array_equal(gd.read("100", [1], scale="1/2")[0], half[1])
    with pytest.warns(DeprecationWarning, match="dct_scale"):
        assert gd.read("100", [0], scale=(100, 50))[0].shape == (75, 100, 3)
    with pytest.warns(DeprecationWarning, match="region="):
        np.testing.assert_array_equal(gd.read("100", [1], crop=(16, 8, 64, 48))[0], region)


def test_color_and_dct_options(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    gray = gd.read("100", [0], color="gray")[0]
    assert gray.shape == (120, 160)
    rgb_of_gray = gd.read("gray-clip", [0], color="rgb")[0]
    assert rgb_of_gray.shape == (60, 80, 3)
    np.testing.assert_array_equal(rgb_of_gray[..., 0], gd["gray-clip"][0][0])
    accurate = gd.read("100", [0], dct="accurate", upsampling="smooth")[0]
    fast = gd.read("100", [0])[0]
    assert accurate.shape == fast.shape
    assert np.abs(accurate.astype(int) - fast).mean() < 2
    zune = gd.read("100", [0], codec="zune")[0]
    assert zune.shape == fast.shape and np.abs(zune.astype(int) - fast).mean() < 2


def test_raw_views_are_zero_copy_and_outlive_the_directory(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    views = gd.raw("101")
    expected = [bytes(v) for v in views]
    # Every view of a chunk shares one buffer: the map.
    assert all(v.obj is views[0].obj for v in views)
    with pytest.raises(TypeError):
        views[0][0] = 0
    del gd
    gc.collect()
    assert [bytes(v) for v in views] == expected
    assert gulp.utils.jpeg_bytes_to_img(views[0]).shape == (128, 96, 3)


def test_raw_without_mmap_gives_bytes(any_dir):
    gd = gulp.GulpDirectory(any_dir, mmap=False)
    raw = gd.raw("101", [0, 2])
    assert all(isinstance(r, bytes) for r in raw)
    assert raw == [bytes(v) for v in gulp.GulpDirectory(any_dir).raw("101", [0, 2])]


def test_shapes_from_headers(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    assert gd.shapes("gray-clip", [0]) == [(60, 80, 1)]
    assert gd.shapes("102")[0] == (100, 200, 3)


def test_check_reports_damage(gulpio2_dir, copy_dir):
    report = gulp.check(gulpio2_dir, decode=True)
    assert report.is_clean and report.chunks == 3 and report.items == 7
    assert report.frames == sum(len(v["frame_info"]) for v in
                                gulpio2.GulpDirectory(gulpio2_dir).merged_meta_dict.values())
    assert report.decoded == report.frames
    d = copy_dir(gulpio2_dir)
    os.truncate(os.path.join(d, "data_2.gulp"), 100)
    report = gulp.check(d)
    assert not report.is_clean
    assert any("data_2.gulp" in json.dumps(p) for p in report.problems)


def test_recover_clears_leftovers(tmp_path, sample_items):
    d = tmp_path / "d"
    d.mkdir()
    (d / ".gulp-tmp.data_0.gulp").write_bytes(b"partial")
    assert gulp.check(str(d)).notes
    done = gulp.recover(str(d))
    assert len(done) == 1 and not os.listdir(d)


def make_videos(root):
    """A video-folder dataset: <root>/<label>/<name>.webm, made by ffmpeg."""
    for label, src in [("waving", "testsrc2"), ("clapping", "smptebars")]:
        os.makedirs(root / label)
        for k in range(2):
            subprocess.run(
                ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
                 "-i", f"{src}=size=160x120:rate=25", "-t", "1", "-pix_fmt", "yuv420p",
                 str(root / label / f"clip{k}.webm")], check=True)


def test_ingest_with_a_built_in_adapter(tmp_path):
    make_videos(tmp_path / "videos")
    out = tmp_path / "out"
    report = gulp.ingest("video-folder", tmp_path / "videos", output=out,
                         videos_per_chunk=3, frame_rate=8, frame_size=64)
    assert report["items"] == 4 and report["skipped"] == [] and len(report["chunks"]) == 2
    theirs = gulpio2.GulpDirectory(str(out))
    assert sorted(theirs.merged_meta_dict) == sorted(gulp.GulpDirectory(str(out)).ids())
    frames, meta = theirs["waving-clip0.webm"]
    assert meta["label"] == "waving" and frames[0].shape == (64, 85, 3)
    # The frames gulpio2's ffmpeg call (-r 8 after -i) gives for this video.
    with gulpio2.utils.temp_dir_for_bursting(str(tmp_path)) as burst:
        expected = gulpio2.utils.burst_video_into_frames(
            str(tmp_path / "videos/waving/clip0.webm"), burst, frame_rate=8)
    assert len(frames) == len(expected) >= 8
    with open(out / "label2idx.json") as f:
        assert json.load(f) == {"clapping": 0, "waving": 1}
    # Running it again adds nothing: every id is there.
    again = gulp.ingest("video-folder", tmp_path / "videos", output=out)
    assert again["items"] == 0 and again["already_present"] == 4


def test_sharded_ingest_equals_one_run(tmp_path):
    make_videos(tmp_path / "videos")
    one = tmp_path / "one"
    gulp.ingest("video-folder", tmp_path / "videos", output=one, videos_per_chunk=1,
                frame_rate=8, frame_size=64)
    shared = tmp_path / "shared"
    reports = [gulp.ingest("video-folder", tmp_path / "videos", output=shared,
                           videos_per_chunk=1, frame_rate=8, frame_size=64, shard=shard)
               for shard in [(0, 3), "1/3", (2, 3)]]
    assert [r["chunks"] for r in reports] == [[0, 3], [1], [2]]
    files = sorted(os.listdir(one))
    assert sorted(os.listdir(shared)) == files
    for name in files:
        assert (one / name).read_bytes() == (shared / name).read_bytes(), name
    with pytest.raises(gulp.InvalidInputError, match="I/N"):
        gulp.ingest("video-folder", tmp_path / "videos", output=tmp_path / "x", shard="3/3")


def test_ingest_errors(tmp_path):
    with pytest.raises(gulp.InvalidInputError):
        gulp.ingest("no-such-adapter", tmp_path, output=tmp_path / "o")
    with pytest.raises(gulp.InvalidInputError, match="'auto', '444', '420', not \"422\""):
        gulp.ingest("video-folder", tmp_path, output=tmp_path / "o", subsampling="422")
    with pytest.raises(gulp.GulpError) as e:
        gulp.ingest("20bn-json", tmp_path / "missing.json", tmp_path, output=tmp_path / "o")
    assert "missing.json" in str(e.value)


def test_utils_match_gulpio2(tmp_path):
    frames = ffmpeg_frames("testsrc2", (64, 48), 2) + ffmpeg_frames("testsrc2", (64, 48), 1, "gray")
    for img in frames:
        jpeg = gulp.utils.img_to_jpeg_bytes(img)
        assert jpeg == gulpio2.utils.img_to_jpeg_bytes(img)
        np.testing.assert_array_equal(gulp.utils.jpeg_bytes_to_img(jpeg),
                                      gulpio2.utils.jpeg_bytes_to_img(jpeg))
    for img in (np.zeros((6, 10, 3), np.uint8), np.zeros((10, 6, 3), np.uint8), frames[0]):
        ours = gulp.utils.resize_by_short_edge(img, 3)
        theirs = gulpio2.utils.resize_by_short_edge(img, 3)
        assert ours.shape == theirs.shape
    big = frames[0]
    ours, theirs = gulp.utils.resize_by_short_edge(big, 20), gulpio2.utils.resize_by_short_edge(big, 20)
    assert ours.shape == theirs.shape == (20, 26, 3)
    assert np.abs(ours.astype(int) - theirs).max() <= 1
    assert gulp.utils.resize_by_short_edge(big, -1) is not None
    assert gulp.fileio.calculate_chunk_slices(3, 7) == gulpio2.fileio.calculate_chunk_slices(3, 7)
    assert gulp.utils.calculate_chunk_slices is gulp.fileio.calculate_chunk_slices
    for element in (7, "7", ("7", slice(1, 2)), ("7", [1])):
        assert (gulp.fileio.extract_input_for_getitem(element)
                == gulpio2.fileio.extract_input_for_getitem(element))
    folder = tmp_path / "v"
    folder.mkdir()
    (folder / "a.mp4").write_bytes(b"")
    assert gulp.utils.get_single_video_path(str(folder)) == gulpio2.utils.get_single_video_path(str(folder))
    for name in ("b.jpg", "a.jpg", "c.png"):
        (folder / name).write_bytes(b"")
    assert (gulp.utils.find_images_in_folder(str(folder))
            == gulpio2.utils.find_images_in_folder(str(folder)))


def test_remove_entries_with_duplicate_ids(gulpio2_dir):
    entries = [{"id": 100}, {"id": "new"}, {"id": "new"}, {"id": "other"}]
    assert (gulp.utils.remove_entries_with_duplicate_ids(gulpio2_dir, entries)
            == gulpio2.utils.remove_entries_with_duplicate_ids(gulpio2_dir, entries)
            == [{"id": "new"}, {"id": "other"}])
    with pytest.raises(gulp.utils.DuplicateIdException):
        gulp.utils.remove_entries_with_duplicate_ids(gulpio2_dir, [{"id": "100"}])


def test_burst_video_into_frames(tmp_path):
    make_videos(tmp_path / "videos")
    video = str(tmp_path / "videos" / "waving" / "clip0.webm")
    with gulp.utils.temp_dir_for_bursting(str(tmp_path)) as burst:
        ours = gulp.utils.burst_video_into_frames(video, burst, frame_rate=8)
        with gulpio2.utils.temp_dir_for_bursting(str(tmp_path)) as burst2:
            theirs = gulpio2.utils.burst_video_into_frames(video, burst2, frame_rate=8)
            assert [os.path.basename(p) for p in ours] == [os.path.basename(p) for p in theirs]
        assert len(ours) >= 8
        images = list(gulp.utils.resize_images(ours, 60))
        assert images[0].shape == (60, 80, 3)
    assert not os.path.exists(burst)


def test_public_names():
    import gulp.adapters
    import gulp.fileio

    for name in ("GulpDirectory", "GulpChunk", "ChunkWriter", "GulpIngestor", "__version__"):
        assert hasattr(gulp, name) and hasattr(gulpio2, name)
    for name in dir(gulpio2.fileio):
        if not name.startswith("_") and name not in ("np", "os", "pickle", "json", "glob", "tqdm",
                                                     "ABC", "abstractmethod", "contextmanager",
                                                     "namedtuple", "OrderedDict", "defaultdict",
                                                     "ProcessPoolExecutor", "sys", "shutil",
                                                     "jpeg_bytes_to_img", "img_to_jpeg_bytes",
                                                     "Iterable"):
            assert hasattr(gulp.fileio, name), name
    assert hasattr(gulp.adapters, "AbstractDatasetAdapter")
    assert gulp.utils._JPEG_WRITE_QUALITY == gulpio2.utils._JPEG_WRITE_QUALITY == 90
    assert gulp.GulpDirectory.__doc__ and gulp.GulpDirectory.read.__doc__


@pytest.mark.parametrize("module", ["gulp._gulp"])
def test_stubs_match_the_modules(module):
    """Every name of the native module's stub exists at run time, and every
    public function and method at run time is in the stub. (The pure-Python
    modules carry their own annotations; mypy --strict and stubtest check
    both in scripts/ci/typecheck.sh.) Private classes of the stub are typing
    helpers (protocols of what the native side reads) with no run-time
    twin."""
    import ast
    import importlib

    mod = importlib.import_module(module)
    stub_path = os.path.join(os.path.dirname(gulp.__file__), module.split(".")[-1] + ".pyi")
    tree = ast.parse(open(stub_path).read())
    stubbed, attributes = {}, {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("_"):
            assert any(getattr(b, "id", None) == "Protocol" for b in node.bases), node.name
        elif isinstance(node, ast.ClassDef):
            stubbed[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            attributes[node.name] = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        elif isinstance(node, ast.FunctionDef):
            stubbed[node.name] = None
    for name, methods in stubbed.items():
        assert hasattr(mod, name), f"{module}.{name}"
        for m in methods or ():
            assert hasattr(getattr(mod, name), m), f"{module}.{name}.{m}"
    for name in dir(mod):
        obj = getattr(mod, name)
        if name.startswith("_") or getattr(obj, "__module__", module) != module:
            continue
        if isinstance(obj, type):
            assert name in stubbed, f"{module}.{name} has no stub"
            public = {m for m in vars(obj) if not m.startswith("_")}
            known = stubbed[name] | attributes[name]
            assert public <= known, f"{module}.{name}: {public - known}"
        elif callable(obj):
            assert name in stubbed, f"{module}.{name} has no stub"
