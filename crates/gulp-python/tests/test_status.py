"""gulp.status: where a sharded ingest is, as `gulp status --json` says it."""

import json
import os
import subprocess
import sys

import pytest

import numpy as np

import gulp

#: A real 16x16 JPEG.
JPEG = gulp._gulp.encode_jpeg(np.full((16, 16, 3), 128, np.uint8), 90)


def test_status_of_a_finished_run_matches_the_command(gulp_dir):
    status = gulp.status(gulp_dir, shards=2)
    assert status["complete"] and not status["running"]
    assert status["shards"] == 2 and status["resubmit"] == []
    assert [t["state"] for t in status["tasks"]] == ["done", "done"]
    chunks = sum(t["chunks"] for t in status["tasks"])
    assert chunks == status["chunks_committed"] == len(list(gulp.GulpDirectory(gulp_dir).chunks()))
    cmd = os.path.join(os.path.dirname(sys.executable), "gulp")
    out = subprocess.run([cmd, "status", gulp_dir, "--shards", "2", "--json"], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == status


def test_status_without_a_run_needs_the_task_count(gulp_dir):
    with pytest.raises(gulp.InvalidInputError, match="give --shards N"):
        gulp.status(gulp_dir)


def test_merge_moves_shards_and_refuses_a_shared_chunk(tmp_path):
    # Two shard directories as a 2-task ingest leaves them: chunks 0 and 2
    # in one, 1 in the other; then a third that repeats chunk 1.
    shards = {"a": [0, 2], "b": [1]}
    for name, chunks in shards.items():
        path = tmp_path / name
        path.mkdir()
        for n in chunks:
            writer = gulp._gulp.Writer(str(path), n, fsync=False)
            writer.append_jpegs(f"id-{n}", {"label": f"l{n % 2}"}, [JPEG])
            writer.commit()
    out = str(tmp_path / "out")
    report = gulp.merge(out, [str(tmp_path / "a"), str(tmp_path / "b")])
    assert report == {"moved": 3, "sources": 2, "labels": 0}
    gd = gulp.GulpDirectory(out)
    assert sorted(gd.merged_meta_dict) == ["id-0", "id-1", "id-2"]
    assert gulp.status(out, shards=2)["complete"]

    again = tmp_path / "c"
    again.mkdir()
    writer = gulp._gulp.Writer(str(again), 1, fsync=False)
    writer.append_jpegs("id-9", {"label": "l9"}, [JPEG])
    writer.commit()
    with pytest.raises(gulp.IngestError, match="chunk 1 is in both"):
        gulp.merge(out, [str(again)])
    assert os.path.exists(again / "data_1.gulp")  # nothing moved


def test_copy_gives_the_same_directory_and_skips_what_is_there(gulp_dir, tmp_path):
    dst = tmp_path / "copied"
    report = gulp.copy(gulp_dir, dst)
    names = sorted(n for n in os.listdir(gulp_dir) if not n.startswith(".gulp-tmp.") and not n.endswith(".lock"))
    assert sorted(os.listdir(dst)) == names
    assert report["copied"] == len(names) and report["skipped"] == 0 and report["unverified"] == 0
    for name in names:
        with open(os.path.join(gulp_dir, name), "rb") as a, open(dst / name, "rb") as b:
            assert a.read() == b.read(), name
    original, copy = gulp.GulpDirectory(gulp_dir), gulp.GulpDirectory(str(dst))
    assert sorted(copy.merged_meta_dict) == sorted(original.merged_meta_dict)
    again = gulp.copy(gulp_dir, dst)
    assert again["copied"] == 0 and again["skipped"] == len(names)


def test_copy_into_another_directory_is_refused(gulp_dir, tmp_path):
    dst = tmp_path / "other"
    dst.mkdir()
    (dst / "data_9.gulp").write_bytes(b"another dataset")
    with pytest.raises(gulp.InvalidInputError, match="data_9.gulp"):
        gulp.copy(gulp_dir, dst)
    assert os.listdir(dst) == ["data_9.gulp"]
