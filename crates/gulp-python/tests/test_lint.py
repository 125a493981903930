"""gulp.lint on an image directory gulped by the real ingest, with images
from the real ffmpeg: planted copies and a black image are found, and the
ids file it writes is read back by ClipLoader(ids=...) and Source(ids=...)
as it is."""

import json
import subprocess

import pytest

import gulp


def ffmpeg_image(path, source, vf=None):
    args = ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", source]
    if vf:
        args += ["-vf", vf]
    subprocess.run(args + ["-frames:v", "1", "-q:v", "3", str(path)], check=True)


@pytest.fixture(scope="module")
def linted_dir(tmp_path_factory):
    """Images in two classes: 6 distinct pictures, a byte copy of one, a
    re-encoded half-size copy of another, and a black image."""
    root = tmp_path_factory.mktemp("lint")
    images = root / "images"
    for cls in ("a", "b"):
        (images / cls).mkdir(parents=True)
    for i in range(6):
        ffmpeg_image(images / ("a" if i < 3 else "b") / f"p{i}.jpg",
                     f"testsrc2=size=320x240:rate=10,trim=start={i}",
                     f"hue=h={i * 47}:s=1.5,rotate={i * 0.4}")
    (images / "b" / "p0-copy.jpg").write_bytes((images / "a" / "p0.jpg").read_bytes())
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i",
                    str(images / "a" / "p1.jpg"), "-vf", "scale=160:120", "-q:v", "10",
                    str(images / "b" / "p1-small.jpg")], check=True)
    ffmpeg_image(images / "b" / "black.jpg", "color=black:size=320x240")
    out = root / "gulp"
    gulp.ingest("image-folder", images, output=out)
    return root, out


def test_lint_finds_the_plants_and_its_ids_file_feeds_the_loader(linted_dir):
    root, out = linted_dir
    ids_file = root / "keep.ids"
    report = gulp.lint(out, ids_out=ids_file, drop=["dark"])
    assert report.items == 9
    groups = {f["check"]: sorted(i["id"] for i in f["items"]) for f in report.findings
              if f["check"] in ("exact_duplicate", "near_duplicate", "dark")}
    assert groups == {
        "exact_duplicate": ["a-p0.jpg", "b-p0-copy.jpg"],
        "near_duplicate": ["a-p1.jpg", "b-p1-small.jpg"],
        "dark": ["b-black.jpg"],
    }
    assert [f["items"][0]["frames"] for f in report.by_check("dark")] == [[0]]
    assert set(report.to_dict()) == {"items", "findings", "classes", "undecodable"}
    assert report.classes == [{"a": 3, "b": 6}]
    assert not report

    kept = ids_file.read_text().split()
    assert sorted(kept) == ["a-p0.jpg", "a-p1.jpg", "a-p2.jpg", "b-p3.jpg", "b-p4.jpg",
                            "b-p5.jpg"]
    loader = gulp.ClipLoader(out, ids=str(ids_file), frames=1, resize=None, size=(96, 96),
                             crop="center", flip=False, batch_size=4, shuffle=False,
                             drop_last=False, threads=1)
    served = [i for batch in loader for i in batch.ids]
    assert sorted(served) == sorted(kept)
    source = gulp.Source(out, ids=str(ids_file))
    assert source.ids == kept


def test_checks_and_thresholds_are_keywords(linted_dir):
    _, out = linted_dir
    only_dark = gulp.lint([out], checks=["dark"])
    assert {f["check"] for f in only_dark.findings} == {"dark"}
    # The black image's 99th luma percentile is 0: dark unless the line is
    # below it.
    assert not gulp.lint(out, checks=["dark"], dark=-1).findings
    # Same JSON as the command line's --json.
    assert json.loads(json.dumps(only_dark.to_dict()))["items"] == 9


def test_bad_arguments_raise_invalid_input(linted_dir, tmp_path):
    _, out = linted_dir
    with pytest.raises(gulp.InvalidInputError, match="unknown check"):
        gulp.lint(out, checks=["dark", "fuzzy"])
    with pytest.raises(gulp.InvalidInputError, match="whole number"):
        gulp.lint(out, frozen_frames=2.5)  # type: ignore[arg-type]
    with pytest.raises(gulp.InvalidInputError, match="one per directory"):
        gulp.lint([out, out], ids_out=tmp_path / "one.ids")
    with pytest.raises(gulp.GulpFileNotFoundError):
        gulp.lint(tmp_path / "missing")
