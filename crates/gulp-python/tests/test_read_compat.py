"""gulp's reading API against the real gulpio2 0.0.4, on directories written
by gulpio2 and by gulp."""

import numpy as np
import pytest

import gulp
import gulpio2


def assert_frames_equal(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert isinstance(a, np.ndarray) and a.dtype == np.uint8
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_directory_attributes(any_dir):
    ours, theirs = gulp.GulpDirectory(any_dir), gulpio2.GulpDirectory(any_dir)
    assert ours.num_chunks == theirs.num_chunks == 3
    assert ours.merged_meta_dict == theirs.merged_meta_dict
    assert list(ours.merged_meta_dict) == list(theirs.merged_meta_dict)
    assert ours.all_meta_dicts == theirs.all_meta_dicts
    assert ours.chunk_lookup == theirs.chunk_lookup
    assert list(ours.chunk_objs_lookup) == list(theirs.chunk_objs_lookup)
    assert len(ours) == len(theirs.merged_meta_dict) == 7
    assert sorted(ours.ids()) == sorted(theirs.merged_meta_dict)


def test_frame_info_is_gulpio2s(any_dir):
    ours, theirs = gulp.GulpDirectory(any_dir), gulpio2.GulpDirectory(any_dir)
    for id_, item in theirs.merged_meta_dict.items():
        assert ours.item(id_)["frame_info"] == item["frame_info"]
        assert ours.item(id_)["meta_data"] == item["meta_data"]
        assert ours.frame_count(id_) == len(item["frame_info"])


@pytest.mark.parametrize("selector", [
    None, slice(None), slice(1, 4), slice(None, None, 2), slice(None, None, -1),
    slice(-3, None), slice(5, 1, -2), slice(100, 200), [0], [1, 3], [-1, 0, -1],
    [2, 2, 2], [], np.array([0, 1]), np.array([-1, 2], dtype=np.int8),
])
def test_frames_for_every_selector(any_dir, selector):
    ours, theirs = gulp.GulpDirectory(any_dir), gulpio2.GulpDirectory(any_dir)
    for id_ in theirs.merged_meta_dict:
        n = len(theirs.merged_meta_dict[id_]["frame_info"])
        if isinstance(selector, (list, np.ndarray)) and len(selector) and max(
                int(i) for i in selector) >= n:
            continue
        element = id_ if selector is None else (id_, selector)
        f1, m1 = ours[element]
        f2, m2 = theirs[element]
        assert_frames_equal(f1, f2)
        assert m1 == m2


@pytest.mark.parametrize("selector", [np.array([True, False]), (0, 1), range(2), 1.5])
def test_selectors_gulpio2_refuses_are_type_errors(any_dir, selector):
    with pytest.raises(TypeError):
        gulpio2.GulpDirectory(any_dir)["100", selector]
    with pytest.raises(TypeError) as e:
        gulp.GulpDirectory(any_dir)["100", selector]
    assert isinstance(e.value, gulp.GulpError)


def test_int_and_str_ids_are_the_same(any_dir):
    ours, theirs = gulp.GulpDirectory(any_dir), gulpio2.GulpDirectory(any_dir)
    f1, m1 = ours[100]
    f2, m2 = theirs["100"]
    assert_frames_equal(f1, f2)
    assert m1 == m2 == {"label": "class 0", "idx": 0, "nested": {"a": [1, 2.5, None, True]}}
    assert 100 in ours and "100" in ours and "nope" not in ours


def test_repeated_append_reads_first_meta_and_all_frames(any_dir, sample_items):
    ours = gulp.GulpDirectory(any_dir)
    frames, meta = ours["100"]
    assert len(frames) == len(sample_items[0]["frames"]) + 2
    assert meta == sample_items[0]["meta"]
    assert ours.item("100")["meta_data"][1] == {"second": True}


def test_gray_frames_are_2d(any_dir):
    frames, _ = gulp.GulpDirectory(any_dir)["gray-clip"]
    assert all(f.ndim == 2 for f in frames)
    assert_frames_equal(frames, gulpio2.GulpDirectory(any_dir)["gray-clip"][0])


def test_raw_bytes_are_the_records(any_dir):
    ours = gulp.GulpDirectory(any_dir)
    theirs = gulpio2.GulpDirectory(any_dir, jpeg_decoder=lambda b: b)
    for id_ in ours.ids():
        raw = ours.raw(id_)
        jpegs, _ = theirs[id_]
        assert [bytes(m) for m in raw] == jpegs
        assert all(isinstance(m, memoryview) and m.readonly for m in raw)
        assert [bytes(m) for m in ours.raw(id_, [-1, 0])] == [jpegs[-1], jpegs[0]]
        assert [bytes(m) for m in ours.raw(id_, slice(None, None, -2))] == jpegs[::-2]


def test_custom_jpeg_decoder_gets_bytes(any_dir):
    seen = []

    def decoder(data):
        seen.append(type(data))
        return len(data)

    ours = gulp.GulpDirectory(any_dir, jpeg_decoder=decoder)
    theirs = gulpio2.GulpDirectory(any_dir, jpeg_decoder=lambda b: len(b))
    assert ours["101", ::2] == theirs["101", ::2]
    assert set(seen) == {bytes}


def test_chunks_and_iteration(any_dir):
    ours, theirs = gulp.GulpDirectory(any_dir), gulpio2.GulpDirectory(any_dir)
    ours_chunks, theirs_chunks = list(ours), list(theirs.chunks())
    assert len(ours_chunks) == len(theirs_chunks) == 3
    for a, b in zip(ours_chunks, theirs_chunks):
        assert a.data_file_path == b.data_file_path
        assert a.meta_file_path == b.meta_file_path
        assert a.meta_dict == b.meta_dict
        with b.open("rb"):
            theirs_items = list(b)
        with a.open("rb"):
            ours_items = list(a)
        assert len(ours_items) == len(theirs_items)
        for (f1, m1), (f2, m2) in zip(ours_items, theirs_items):
            assert_frames_equal(f1, f2)
            assert m1 == m2
        first = next(iter(b.meta_dict))
        assert first in a and first in b
        assert "nope" not in a
        with b.open("rb"):
            f2, m2 = b[first, 1:3]
        f1, m1 = a[first, 1:3]
        assert_frames_equal(f1, f2)
        assert m1 == m2


def test_iter_all_accepted_ids_and_shuffle(any_dir):
    chunk = list(gulp.GulpDirectory(any_dir))[0]
    ids = list(chunk.meta_dict)
    metas = [m for _, m in chunk.iter_all(accepted_ids=[ids[-1], ids[0], "nope"])]
    assert [m["idx"] for m in metas] == [chunk.read_frames(ids[0])[1]["idx"],
                                          chunk.read_frames(ids[-1])[1]["idx"]]
    np.random.seed(3)
    shuffled = [m["idx"] for _, m in chunk.iter_all(shuffle=True)]
    assert sorted(shuffled) == sorted(m["idx"] for _, m in chunk.iter_all())


def test_standalone_chunk_like_gulpio2(any_dir):
    data, meta = any_dir + "/data_1.gulp", any_dir + "/meta_1.gmeta"
    ours = gulp.GulpChunk(data, meta)
    theirs = gulpio2.fileio.GulpChunk(data, meta)
    assert ours.meta_dict == theirs.meta_dict
    with theirs.open("rb"):
        expected = list(theirs.iter_all())
    got = list(ours.iter_all())
    for (f1, m1), (f2, m2) in zip(got, expected):
        assert_frames_equal(f1, f2)
        assert m1 == m2


def test_opening_is_lazy(gulpio2_dir):
    gd = gulp.GulpDirectory(gulpio2_dir)
    assert gd._cache == {}
    gd["100"]
    assert gd._cache == {}
    assert gd.merged_meta_dict
    assert "merged_meta_dict" in gd._cache
