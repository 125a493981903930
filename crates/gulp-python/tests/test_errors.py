"""Errors: Python exceptions of the classes gulpio2 users catch, all
gulp.GulpError, with the path, id and byte offset; nothing half-written."""

import json
import os
import re

import numpy as np
import pytest

import gulp
import gulpio2
from conftest import write_chunks


def test_every_class_rust_raises_is_a_gulp_error_exported_by_gulp():
    # The classes the extension raises are declared once, in the classes!
    # block of src/errors.rs; each must be a class of gulp.errors.
    source = os.path.join(os.path.dirname(__file__), "..", "src", "errors.rs")
    with open(source) as f:
        block = f.read().split("classes! {", 1)[1].split("}", 1)[0]
    names = re.findall(r'^\s*\w+ => "(\w+)",$', block, re.M)
    assert len(names) == len(block.strip().splitlines()) >= 13
    for name in names:
        cls = getattr(gulp.errors, name)
        assert issubclass(cls, gulp.GulpError) and name in gulp.errors.__all__, name
        assert getattr(gulp, name) is cls, name


def test_unknown_id_is_a_key_error(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    with pytest.raises(KeyError) as e:
        gd["nope"]
    assert isinstance(e.value, gulp.GulpError) and isinstance(e.value, gulp.UnknownIdError)
    assert '"nope"' in str(e.value) and any_dir in str(e.value)
    # gulpio2 raises KeyError too.
    with pytest.raises(KeyError):
        gulpio2.GulpDirectory(any_dir)["nope"]
    for call in (lambda: gd.raw("nope"), lambda: gd.meta("nope"), lambda: gd.read("nope"),
                 lambda: list(gd)[0].read_frames("nope")):
        with pytest.raises(gulp.UnknownIdError):
            call()


@pytest.mark.parametrize("selector", [[7], [-8], [0, 100]])
def test_index_out_of_range_is_an_index_error(any_dir, selector):
    with pytest.raises(IndexError):
        gulpio2.GulpDirectory(any_dir)["101", selector]
    with pytest.raises(IndexError) as e:
        gulp.GulpDirectory(any_dir)["101", selector]
    assert isinstance(e.value, gulp.SelectionError)
    assert '"101"' in str(e.value) and "out of range for 7 frames" in str(e.value)


def test_bad_getitem_key_is_a_type_error(any_dir):
    for key in (7.0, (7,), ("100", 1, 2)):
        with pytest.raises(TypeError):
            gulpio2.GulpDirectory(any_dir)[key]
        with pytest.raises(TypeError) as e:
            gulp.GulpDirectory(any_dir)[key]
        assert isinstance(e.value, gulp.GulpError)


def test_missing_directory_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        gulp.GulpDirectory(str(tmp_path / "missing"))
    assert isinstance(e.value, gulp.GulpError) and isinstance(e.value, OSError)
    assert str(tmp_path / "missing") in str(e.value)


def test_corrupt_meta_is_a_value_error_with_offset(gulpio2_dir, copy_dir):
    d = copy_dir(gulpio2_dir)
    meta = os.path.join(d, "meta_1.gmeta")
    with open(meta) as f:
        text = f.read()
    with open(meta, "w") as f:
        f.write(text[:40])
    with pytest.raises(ValueError) as e:
        gulp.GulpDirectory(d)
    assert isinstance(e.value, gulp.FormatError)
    assert "meta_1.gmeta" in str(e.value) and "40" in str(e.value)


def test_empty_meta_file(gulpio2_dir, copy_dir):
    d = copy_dir(gulpio2_dir)
    open(os.path.join(d, "meta_2.gmeta"), "w").close()
    with pytest.raises(gulp.FormatError) as e:
        gulp.GulpDirectory(d)
    assert "meta_2.gmeta" in str(e.value) and "empty" in str(e.value)


def test_duplicate_ids_across_chunks(gulpio2_dir, copy_dir):
    d = copy_dir(gulpio2_dir)
    for suffix in ("gulp", "gmeta"):
        kind = "data" if suffix == "gulp" else "meta"
        os.link(os.path.join(d, f"{kind}_0.{suffix}"), os.path.join(d, f"{kind}_9.{suffix}"))
    with pytest.raises(gulp.DuplicateIdError) as e:
        gulp.GulpDirectory(d)
    assert isinstance(e.value, ValueError)
    assert "meta_0.gmeta" in str(e.value) and "meta_9.gmeta" in str(e.value)


def test_truncated_data_names_id_frame_and_offset(gulpio2_dir, copy_dir):
    d = copy_dir(gulpio2_dir)
    data = os.path.join(d, "data_0.gulp")
    with open(os.path.join(d, "meta_0.gmeta")) as f:
        meta = json.load(f)
    # The record that ends last ("100" was appended twice, its last frames
    # are at the end of the file).
    last_id, loc = max(((i, m["frame_info"][-1][0]) for i, m in meta.items()), key=lambda t: t[1])
    os.truncate(data, loc + 10)
    gd = gulp.GulpDirectory(d)
    with pytest.raises(gulp.FormatError) as e:
        gd[last_id]
    msg = str(e.value)
    assert "data_0.gulp" in msg and f'"{last_id}"' in msg and f"byte {loc}" in msg
    # The items before it still read.
    first = min(meta, key=lambda i: meta[i]["frame_info"][-1][0])
    assert len(gd[first][0]) == len(meta[first]["frame_info"])


def test_damaged_jpeg_is_a_decode_error(gulpio2_dir, copy_dir):
    d = copy_dir(gulpio2_dir)
    with open(os.path.join(d, "meta_1.gmeta")) as f:
        meta = json.load(f)
    id_ = list(meta)[0]
    loc, pad, length = meta[id_]["frame_info"][2]
    with open(os.path.join(d, "data_1.gulp"), "r+b") as f:
        f.seek(loc + length // 2)
        f.write(b"\xff\xd9" * 64)  # an end-of-image marker in mid-scan
    gd = gulp.GulpDirectory(d)
    with pytest.raises(ValueError) as e:
        gd[id_]
    assert isinstance(e.value, gulp.DecodeError)
    msg = str(e.value)
    assert "data_1.gulp" in msg and f'"{id_}"' in msg and "frame 2" in msg and f"byte {loc}" in msg
    # Frames around it decode; strict=False gives the decoder's best image.
    assert len(gd[id_, [0, 1, 3]][0]) == 3
    assert gd.read(id_, [2], strict=False)[0].shape == gd.read(id_, [1])[0].shape


def test_exception_inside_write_leaves_nothing(tmp_path, sample_items):
    d = str(tmp_path / "d")
    os.makedirs(d)
    chunk = next(gulp.GulpDirectory(d).new_chunks(1))
    with pytest.raises(RuntimeError):
        with chunk.open("wb"):
            chunk.append("a", {}, sample_items[0]["frames"])
            raise RuntimeError("adapter failed")
    assert os.listdir(d) == []
    # gulpio2 leaves a data file without meta here, and the directory is
    # unreadable; gulp's stays an empty, valid directory.
    assert len(gulp.GulpDirectory(d)) == 0


def test_bad_frames_are_refused_and_nothing_is_written(tmp_path, sample_items):
    d = str(tmp_path / "d")
    write_chunks(gulp.fileio, d, sample_items[:1], per_chunk=1)
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    chunk = gulp.GulpChunk(d + "/data_0.gulp", d + "/meta_0.gmeta")
    bad = [
        [np.zeros((8, 8, 3), np.float64)],          # gulpio2: ValueError (dtype)
        [np.zeros((8, 8, 4), np.uint8)],            # 4 channels
        [np.zeros((8, 8, 3), np.uint8)[:, ::2]],    # not contiguous
        [np.zeros((2, 8, 8, 3), np.uint8)],         # 4-d
    ]
    for frames in bad:
        with pytest.raises(ValueError) as e:
            with chunk.open("ab"):
                chunk.append("good", {}, sample_items[1]["frames"])
                chunk.append("bad", {}, frames)
        assert isinstance(e.value, gulp.InvalidInputError)
        assert '"bad"' in str(e.value)
    after = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    assert after == before


@pytest.mark.parametrize("name", [
    "data_01.gulp", "data_.gulp", "data_-1.gulp", "data_+1.gulp", "data_1.gulp.bak",
    "data_1.gulp\n", ".gulp-tmp.data_1.gulp", "data_99999999999999999999999.gulp",
    "data_\uff11.gulp", "database.gulp",
])
def test_chunk_names_a_reader_ignores_are_refused(tmp_path, name):
    # The same names as gulp-format's layout.rs rejects: a GulpChunk of
    # `data_01.gulp` would be a chunk no GulpDirectory lists.
    d = str(tmp_path)
    with pytest.raises(gulp.InvalidInputError, match="chunk files are named data_N.gulp"):
        gulp.GulpChunk(os.path.join(d, name), os.path.join(d, "meta_1.gmeta"))
    if name.startswith("data_") and name.endswith(".gulp"):
        meta = "meta_" + name[len("data_"):-len(".gulp")] + ".gmeta"
        with pytest.raises(gulp.InvalidInputError, match="chunk files are named meta_N.gmeta"):
            gulp.GulpChunk(os.path.join(d, "data_1.gulp"), os.path.join(d, meta))


def test_canonical_chunk_names_are_accepted(tmp_path):
    d = str(tmp_path)
    for n in (0, 7, 10, 2**64 - 1):
        chunk = gulp.GulpChunk(os.path.join(d, f"data_{n}.gulp"), os.path.join(d, f"meta_{n}.gmeta"))
        assert chunk.data_file_path.endswith(f"data_{n}.gulp")


def test_meta_that_json_cannot_store_is_refused(tmp_path, sample_items):
    d = str(tmp_path / "d")
    os.makedirs(d)
    chunk = next(gulp.GulpDirectory(d).new_chunks(1))
    with pytest.raises(gulp.InvalidInputError) as e:
        with chunk.open("wb"):
            chunk.append("x", {"when": object()}, sample_items[0]["frames"][:1])
    assert '"x"' in str(e.value)
    assert os.listdir(d) == []


def test_writing_a_closed_chunk(tmp_path, sample_items):
    d = str(tmp_path / "d")
    os.makedirs(d)
    chunk = next(gulp.GulpDirectory(d).new_chunks(1))
    with pytest.raises(gulp.InvalidInputError):
        chunk.append("x", {}, sample_items[0]["frames"][:1])
    with pytest.raises(NotImplementedError):
        with chunk.open("r+"):
            pass


def test_bad_decode_options(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    for kwargs in ({"scale": "1/3"}, {"color": "cmyk"}, {"dct": "exact"}, {"scale": 2.5}):
        with pytest.raises(ValueError) as e:
            gd.read("100", **kwargs)
        assert isinstance(e.value, gulp.GulpError)
    with pytest.raises(gulp.GulpError):
        gd.read("100", crop=(0, 0, 10_000, 10))
