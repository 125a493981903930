"""GulpIO v1's loading stack in gulp: ``gulp.dataset``, ``gulp.loader`` and
``gulp.transforms`` on real directories, with v1's loader_tests scenarios,
the v1 bugs fixed, and directories written by the real gulpio2."""

import json
import os
import pickle
import random
import subprocess
import sys

import numpy as np
import pytest

import gulp
import gulp.transforms as T
import gulpio2
from gulp.dataset import GulpImageDataset, GulpIOEmptyFolder, GulpVideoDataset
from gulp.loader import (BatchSampler, DataLoader, RandomSampler, SequentialSampler,
                         SubsetRandomSampler, default_collate)

LABEL2IDX = {"0": 1, "1": 2, "2": 0}
SHORT = 5  # frames of every 16th video of `video_dir`


def level_frame(j, size=(24, 32)):
    """Frame `j` of a video: every pixel 8 * j (JPEG keeps it within a level or two)."""
    return np.full(size + (3,), 8 * j, np.uint8)


def frame_levels(frames):
    """The frame numbers of `level_frame`s read back."""
    return [int(round(float(f.mean()) / 8)) for f in frames]


def write_dir(module, directory, items, label2idx):
    """`items` ([(id, meta, frames)]) in one chunk written by `module`
    (gulp.fileio or gulpio2.fileio), and a label2idx.json."""
    os.makedirs(directory, exist_ok=True)
    chunk = next(module.GulpDirectory(directory).new_chunks(1))
    with chunk.open("wb"):
        for id_, meta, frames in items:
            chunk.append(id_, meta, frames)
    with open(os.path.join(directory, "label2idx.json"), "w") as f:
        json.dump(label2idx, f)
    return directory


@pytest.fixture(scope="module")
def zero_dir(tmp_path_factory):
    """v1's loader_tests chunk: 128 videos of 32 black 100x100 frames, label "0"."""
    frames = [np.zeros((100, 100, 3), np.uint8)] * 32
    return write_dir(gulp.fileio, str(tmp_path_factory.mktemp("v1") / "zero"),
                     [(i, {"label": "0"}, frames) for i in range(128)],
                     {"0": 1, "1": 2, "2": 2})


@pytest.fixture(scope="module")
def video_dir(tmp_path_factory):
    """128 videos: frame j is level 8j; every 16th video has 5 frames, the
    others 32; video i has label str(i % 3)."""
    items = []
    for i in range(128):
        n = SHORT if i % 16 == 0 else 32
        items.append((i, {"label": str(i % 3), "i": i}, [level_frame(j) for j in range(n)]))
    return write_dir(gulp.fileio, str(tmp_path_factory.mktemp("v1") / "videos"), items,
                     LABEL2IDX)


def image(i):
    """Image i: 20x28, a ramp plus i, so that crops and flips show."""
    y, x = np.mgrid[0:20, 0:28]
    return np.stack([(x * 8 + i) % 256, (y * 10 + i) % 256, np.full_like(x, i)],
                    -1).astype(np.uint8)


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    return write_dir(gulp.fileio, str(tmp_path_factory.mktemp("v1") / "images"),
                     [(i, {"label": str(i % 3)}, [image(i)]) for i in range(128)], LABEL2IDX)


def expected_label(i):
    return LABEL2IDX[str(i % 3)]


# v1's loader_tests -------------------------------------------------------------

class SimpleDataset:
    """v1's loader_tests SimpleDataset."""

    def __getitem__(self, index):
        return np.random.rand(3, 4, 32, 32), np.random.randint(0, high=4, size=4)

    def __len__(self):
        return 12


@pytest.mark.parametrize("kwargs,batches", [
    (dict(num_workers=1), 12), (dict(num_workers=2), 12), (dict(num_workers=0), 12),
    (dict(num_workers=2, shuffle=True), 12), (dict(num_workers=1, drop_last=True), 12),
    (dict(num_workers=1, shuffle=True, drop_last=True, batch_size=5), 2),
    (dict(batch_size=5), 3),
])
def test_v1_loader_on_simple_dataset(kwargs, batches):
    seen = 0
    for data, label in DataLoader(SimpleDataset(), **kwargs):
        n = kwargs.get("batch_size", 1)
        assert data.dtype == np.float64 and data.shape[1:] == (3, 4, 32, 32)
        assert label.shape[1:] == (4,) and label.dtype.kind == "i"
        assert data.shape[0] == label.shape[0] <= n
        assert 0 <= data.min() and data.max() < 1 and 0 <= label.min() and label.max() < 4
        seen += 1
    assert seen == batches == len(DataLoader(SimpleDataset(), **kwargs))


def v1_iterate(loader, frames_shape):
    """v1's TestGulpVideoDataset.iterate, with the shapes checked too."""
    for idx, data in enumerate(loader):
        assert len(data) == 2
        assert data[0].shape == frames_shape and data[0].dtype == np.uint8
        assert data[0].sum() == 0
        assert data[1][0] == 1
        if idx == 5:
            break
    return idx


def test_v1_video_dataset_through_the_loader(zero_dir):
    dataset = GulpVideoDataset(zero_dir, 2, 2, False)
    assert len(dataset) == 128
    assert v1_iterate(DataLoader(dataset, num_workers=0), (1, 2, 100, 100, 3)) == 5
    assert v1_iterate(DataLoader(dataset, num_workers=2), (1, 2, 100, 100, 3)) == 5
    batches = list(DataLoader(dataset, batch_size=16, num_workers=2))
    assert len(batches) == 8
    assert all(f.shape == (16, 2, 100, 100, 3) and f.sum() == 0 for f, _ in batches)
    assert all(label.tolist() == [1] * 16 for _, label in batches)
    # stack=False: a list of frames per item, collated frame by frame.
    unstacked = GulpVideoDataset(zero_dir, 2, 2, False, stack=False)
    frames, label = unstacked[0]
    assert isinstance(frames, list) and len(frames) == 2 and label == 1
    data, labels = next(iter(DataLoader(unstacked, batch_size=4)))
    assert [f.shape for f in data] == [(4, 100, 100, 3)] * 2 and labels.tolist() == [1] * 4


def test_v1_target_transform(zero_dir):
    dataset = GulpVideoDataset(zero_dir, 2, 2, False, target_transform=lambda y: 7)
    assert dataset[0][1] == 7


def test_v1_image_dataset_through_the_loader(tmp_path):
    directory = write_dir(gulp.fileio, str(tmp_path / "img"),
                          [(i, {"label": "0"}, [np.zeros((100, 100, 3), np.uint8)])
                           for i in range(128)], {"0": 1, "1": 2, "2": 2})
    dataset = GulpImageDataset(directory)
    assert v1_iterate(DataLoader(dataset, num_workers=0), (1, 100, 100, 3)) == 5
    assert v1_iterate(DataLoader(dataset, num_workers=2), (1, 100, 100, 3)) == 5


# GulpVideoDataset ----------------------------------------------------------------

def test_items_labels_and_v1_attributes(video_dir):
    dataset = GulpVideoDataset(video_dir, 4, 1, True)
    gd = gulp.GulpDirectory(video_dir)
    assert len(dataset) == 128 and dataset.num_chunks == 1
    assert dataset.items == list(gd.merged_meta_dict.items())
    assert [id_ for id_, _ in dataset.items] == [str(i) for i in range(128)]
    assert dataset.label2idx == LABEL2IDX and list(dataset.classes) == ["0", "1", "2"]
    assert [dataset[i][1] for i in range(128)] == [expected_label(i) for i in range(128)]
    assert (dataset.data_path, dataset.num_frames, dataset.step_size) == (video_dir, 4, 1)
    assert dataset.is_val and dataset.stack and dataset.random_offset
    assert isinstance(dataset.gd, gulp.GulpDirectory)


def test_validation_clips_start_at_the_first_frame(video_dir):
    dataset = GulpVideoDataset(video_dir, 4, 3, True)
    gd = gulp.GulpDirectory(video_dir)
    np.random.seed(0)
    for i in (1, 2, 17):
        frames, label = dataset[i]
        assert frames.shape == (4, 24, 32, 3) and frames.dtype == np.uint8
        np.testing.assert_array_equal(frames, np.stack(gd[i, [0, 3, 6, 9]][0]))
        assert frame_levels(frames) == [0, 3, 6, 9] and label == expected_label(i)


def test_training_clips_start_anywhere_the_clip_fits(video_dir):
    # 32 frames, 4 frames 3 apart: a clip spans 10 frames, so it starts at 0..22.
    # (v1 asked for 12 frames and drew starts 0..19.)
    dataset = GulpVideoDataset(video_dir, 4, 3, False)
    np.random.seed(1)
    starts = set()
    for _ in range(300):
        levels = frame_levels(dataset[1][0])
        assert levels == [levels[0] + 3 * k for k in range(4)]
        starts.add(levels[0])
    assert starts == set(range(23))
    # The same item in validation, or without random offsets: always frame 0.
    for kwargs in (dict(is_val=True), dict(is_val=False, random_offset=False)):
        fixed = GulpVideoDataset(video_dir, 4, 3, **kwargs)
        assert {frame_levels(fixed[1][0])[0] for _ in range(20)} == {0}


def test_training_offsets_follow_numpy_seed(video_dir):
    dataset = GulpVideoDataset(video_dir, 4, 2, False)
    np.random.seed(42)
    first = [frame_levels(dataset[i][0]) for i in range(1, 9)]
    np.random.seed(42)
    assert [frame_levels(dataset[i][0]) for i in range(1, 9)] == first


def test_every_frame_with_num_frames_minus_one(video_dir):
    dataset = GulpVideoDataset(video_dir, -1, 3, False)
    frames, _ = dataset[1]
    assert frame_levels(frames) == list(range(0, 32, 3))
    assert frame_levels(GulpVideoDataset(video_dir, -1, 2, True)[0][0]) == [0, 2, 4]


@pytest.mark.parametrize("step", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("is_val", [True, False])
def test_short_items_repeat_their_last_frame_to_num_frames(video_dir, step, is_val):
    # Item 0 has 5 frames; a clip of 8 frames `step` apart reads 0, step, ...
    # below 5, then repeats the last frame read. v1 returned
    # ceil(5 / step) + 8 * step - 5 frames: 11, 14 and 22 for steps 2, 3, 4.
    dataset = GulpVideoDataset(video_dir, 8, step, is_val)
    frames, label = dataset[0]
    read = list(range(0, SHORT, step))
    assert frames.shape == (8, 24, 32, 3)
    assert frame_levels(frames) == read + [read[-1]] * (8 - len(read))
    assert label == expected_label(0)


def test_padded_frames_are_copies(video_dir):
    frames, _ = GulpVideoDataset(video_dir, 8, 1, True, stack=False)[0]
    assert len(frames) == 8
    np.testing.assert_array_equal(frames[7], frames[4])
    frames[7][:] = 255  # an in-place change to one padded frame changes no other
    assert frame_levels(frames[4:7]) == [4, 4, 4]


def test_video_transforms_and_target_transform(video_dir):
    transform = T.ComposeVideo([T.Normalize([10, 20, 30], [2, 4, 5])],
                               [T.RandomCropVideo(16), T.RandHorFlipVideo()])
    dataset = GulpVideoDataset(video_dir, 4, 2, True, transform=transform,
                               target_transform=lambda y: y * 10)
    plain = GulpVideoDataset(video_dir, 4, 2, True, stack=False)
    for i in (1, 2, 3):
        random.seed(i)
        frames, label = dataset[i]
        random.seed(i)
        expected = np.stack(transform(plain[i][0]))
        assert frames.shape == (4, 16, 16, 3) and frames.dtype == np.float64
        np.testing.assert_array_equal(frames, expected)
        raw = np.stack(plain[i][0]).astype(np.float64)[:, :16, :16]
        assert abs(frames[..., 2].mean() - ((raw[..., 2] - 30) / 5).mean()) < 1e-6
        assert label == expected_label(i) * 10


def test_items_can_be_reassigned(video_dir):
    dataset = GulpVideoDataset(video_dir, 2, 1, True)
    dataset.items = dataset.items[10:20][::-1]
    assert len(dataset) == 10
    assert [dataset[k][1] for k in range(10)] == [expected_label(i) for i in range(19, 9, -1)]
    assert [id_ for id_, _ in dataset.items] == [str(i) for i in range(19, 9, -1)]


def test_datasets_pickle_small_and_work_after(video_dir, image_dir):
    dataset = GulpVideoDataset(video_dir, 4, 2, True, transform=T.ComposeVideo([T.UnitNorm()]))
    dataset.items  # built and cached: not pickled
    data = pickle.dumps(dataset)
    assert len(data) < len(pickle.dumps(dataset.items)) / 4
    copy = pickle.loads(data)
    assert len(copy) == 128 and copy.gd.output_dir == video_dir
    for i in (0, 5, 127):
        np.testing.assert_array_equal(copy[i][0], dataset[i][0])
        assert copy[i][1] == dataset[i][1]
    images = pickle.loads(pickle.dumps(GulpImageDataset(image_dir)))
    np.testing.assert_array_equal(images[3][0], GulpImageDataset(image_dir)[3][0])


def test_dataset_errors(video_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(GulpIOEmptyFolder, match="no chunks"):
        GulpVideoDataset(str(empty), 4, 1, False)
    assert issubclass(GulpIOEmptyFolder, gulp.GulpError)
    assert issubclass(GulpIOEmptyFolder, FileNotFoundError)
    with pytest.raises(FileNotFoundError):
        GulpVideoDataset(str(tmp_path / "missing"), 4, 1, False)
    no_labels = write_dir(gulp.fileio, str(tmp_path / "nolabels"),
                          [(1, {"label": "x"}, [level_frame(0)])], {})
    os.remove(os.path.join(no_labels, "label2idx.json"))
    with pytest.raises(FileNotFoundError, match="label2idx.json"):
        GulpImageDataset(no_labels)
    unknown = write_dir(gulp.fileio, str(tmp_path / "unknown"),
                        [(1, {"label": "x"}, [level_frame(0)])], {"y": 0})
    with pytest.raises(KeyError, match="'x'"):
        GulpImageDataset(unknown)[0]
    with pytest.raises(ValueError):
        GulpVideoDataset(video_dir, 0, 1, False)
    with pytest.raises(ValueError):
        GulpVideoDataset(video_dir, 4, 0, False)


def test_an_item_without_frames_is_an_error_that_names_it(tmp_path):
    # v1 failed with an IndexError on the padding of an empty frame list.
    directory = write_dir(gulp.fileio, str(tmp_path / "empty-item"),
                          [("empty", {"label": "0"}, []), ("one", {"label": "0"}, [level_frame(3)])],
                          LABEL2IDX)
    dataset = GulpVideoDataset(directory, 4, 2, False)
    assert frame_levels(dataset[1][0]) == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="item 'empty' of .*: .*an item of 0 frames"):
        dataset[0]


# DataLoader ------------------------------------------------------------------------

class Indexed:
    """A dataset's samples with their index (picklable, for workers)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __getitem__(self, index):
        frames, label = self.dataset[index]
        return frames, label, index

    def __len__(self):
        return len(self.dataset)


class FailsAt:
    """Raises at one index."""

    def __init__(self, bad):
        self.bad = bad

    def __getitem__(self, index):
        if index == self.bad:
            raise ValueError(f"item {index} is broken")
        return np.zeros(2), index

    def __len__(self):
        return 10


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_batches_in_order(video_dir, num_workers):
    dataset = GulpVideoDataset(video_dir, 2, 1, True)
    loader = DataLoader(dataset, batch_size=10, num_workers=num_workers)
    batches = list(loader)
    assert len(loader) == len(batches) == 13
    assert [len(labels) for _, labels in batches] == [10] * 12 + [8]
    frames = np.concatenate([f for f, _ in batches])
    assert frames.shape == (128, 2, 24, 32, 3) and frames.dtype == np.uint8
    assert np.concatenate([labels for _, labels in batches]).tolist() == [
        expected_label(i) for i in range(128)]
    assert [frame_levels(clip) for clip in frames[:3]] == [[0, 1]] * 3
    dropped = DataLoader(dataset, batch_size=10, num_workers=num_workers, drop_last=True)
    assert len(dropped) == len(list(dropped)) == 12


@pytest.mark.parametrize("num_workers", [0, 2])
def test_shuffle_visits_every_item_once(image_dir, num_workers):
    np.random.seed(3)
    loader = DataLoader(Indexed(GulpImageDataset(image_dir)), batch_size=16, shuffle=True,
                        num_workers=num_workers)
    gd = gulp.GulpDirectory(image_dir)
    order, seen = [], 0
    for images, labels, indices in loader:
        assert images.shape == (16, 20, 28, 3) and images.dtype == np.uint8
        for img, label, index in zip(images, labels, indices):
            assert label == expected_label(index)
            np.testing.assert_array_equal(img, gd[int(index)][0][0])
        order += indices.tolist()
        seen += 1
    assert seen == 8 and sorted(order) == list(range(128)) and order != list(range(128))


def test_worker_batches_are_seeded_per_batch(video_dir):
    dataset = Indexed(GulpVideoDataset(video_dir, 2, 1, False))  # random starts
    runs = []
    for workers in (1, 2, 2):
        np.random.seed(7)
        runs.append([frame_levels(clip)[0] for frames, _, _ in
                     DataLoader(dataset, batch_size=16, num_workers=workers)
                     for clip in frames])
    assert runs[0] == runs[1] == runs[2]  # the same with any number of workers
    starts = [s for i, s in enumerate(runs[0]) if i % 16]  # the long items
    assert len(set(starts)) > 15  # workers do not repeat each other's draws
    np.random.seed(8)
    other = [frame_levels(clip)[0] for frames, _, _ in
             DataLoader(dataset, batch_size=16, num_workers=2) for clip in frames]
    assert other != runs[0]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_errors_in_workers_reach_the_caller(num_workers):
    loader = DataLoader(FailsAt(3), batch_size=2, num_workers=num_workers)
    it = iter(loader)
    data, labels = next(it)
    assert labels.tolist() == [0, 1]
    with pytest.raises(ValueError, match="item 3 is broken"):
        next(it)
    assert [labels.tolist() for _, labels in it] == [[4, 5], [6, 7], [8, 9]]


def test_spawned_workers(video_dir):
    dataset = GulpVideoDataset(video_dir, 3, 2, True)
    spawned = list(DataLoader(dataset, batch_size=32, num_workers=1,
                              multiprocessing_context="spawn"))
    local = list(DataLoader(dataset, batch_size=32))
    assert len(spawned) == 4
    for (f1, l1), (f2, l2) in zip(spawned, local):
        np.testing.assert_array_equal(f1, f2)
        np.testing.assert_array_equal(l1, l2)


def test_default_collate():
    batch = default_collate([(np.ones((2, 3)), 1, "a", {"k": 2.5}), (np.zeros((2, 3)), 2, "b",
                                                                        {"k": 3.5})])
    frames, labels, names, extra = batch
    assert frames.shape == (2, 2, 3) and frames[0].sum() == 6 and frames[1].sum() == 0
    assert labels.tolist() == [1, 2] and labels.dtype.kind == "i"
    assert names == ["a", "b"] and extra["k"].tolist() == [2.5, 3.5]
    assert default_collate([np.int64(4), np.int64(5)]).tolist() == [4, 5]
    with pytest.raises(TypeError):
        default_collate([object(), object()])


def test_samplers_and_loader_arguments():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    np.random.seed(0)
    perm = list(RandomSampler(range(20)))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    assert all(isinstance(i, int) for i in perm)
    subset = list(SubsetRandomSampler([3, 9, 12]))
    assert sorted(subset) == [3, 9, 12] and len(SubsetRandomSampler([3, 9])) == 2
    assert list(BatchSampler(range(10), batch_size=3, drop_last=False)) == [
        [0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(range(10), batch_size=3, drop_last=True)) == [
        [0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3
    data = [(np.full(2, i), i) for i in range(10)]
    loader = DataLoader(data, batch_sampler=[[4, 1], [7]])
    assert [labels.tolist() for _, labels in loader] == [[4, 1], [7]]
    loader = DataLoader(data, sampler=SubsetRandomSampler([2, 5, 8]), batch_size=2)
    assert sorted(sum((labels.tolist() for _, labels in loader), [])) == [2, 5, 8]
    with pytest.raises(ValueError):
        DataLoader(data, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError):
        DataLoader(data, sampler=SequentialSampler(data), shuffle=True)


# GulpImageDataset -------------------------------------------------------------------

def test_image_dataset(image_dir):
    dataset = GulpImageDataset(image_dir)
    gd = gulp.GulpDirectory(image_dir)
    assert len(dataset) == 128 and not dataset.is_val
    for i in (0, 1, 77):
        img, label = dataset[i]
        assert img.shape == (20, 28, 3) and img.dtype == np.uint8
        np.testing.assert_array_equal(img, gd[i][0][0])
        assert label == expected_label(i)
    # v1's README pipeline.
    transform = T.Compose([T.Scale(14), T.CenterCrop(10), T.UnitNorm()])
    loader = DataLoader(GulpImageDataset(image_dir, transform=transform,
                                         target_transform=lambda y: -y),
                        batch_size=32, shuffle=True, drop_last=True)
    batches = list(loader)
    assert len(batches) == 4
    for data, labels in batches:
        assert data.shape == (32, 10, 10, 3) and data.dtype == np.float64
        np.testing.assert_allclose(data.mean(axis=(1, 2, 3)), 0, atol=1e-9)
        np.testing.assert_allclose(data.std(axis=(1, 2, 3)), 1, atol=1e-6)
        assert set(labels.tolist()) <= {0, -1, -2}  # v1 ignored target_transform here
    scaled = T.Scale(14)(gd[5][0][0])
    assert scaled.shape == (14, 19, 3)
    np.testing.assert_array_equal(
        GulpImageDataset(image_dir, transform=T.Compose([T.Scale(14), T.CenterCrop(10)]))[5][0],
        scaled[2:12, 4:14])


def test_image_dataset_refuses_videos(video_dir):
    with pytest.raises(ValueError, match="has 5 frames"):
        GulpImageDataset(video_dir)[0]


# gulpio2-written directories ----------------------------------------------------------

def test_video_dataset_on_a_gulpio2_directory(gulpio2_dir, copy_dir, sample_items):
    directory = copy_dir(gulpio2_dir)
    labels = sorted({item["meta"]["label"] for item in sample_items})
    label2idx = {label: k for k, label in enumerate(labels)}
    with open(os.path.join(directory, "label2idx.json"), "w") as f:
        json.dump(label2idx, f)
    theirs = gulpio2.GulpDirectory(directory)
    dataset = GulpVideoDataset(directory, 4, 2, True, stack=False)
    assert [id_ for id_, _ in dataset.items] == list(theirs.merged_meta_dict)
    for k, (id_, info) in enumerate(theirs.merged_meta_dict.items()):
        frames, label = dataset[k]
        expected = theirs[id_, slice(0, 7, 2)][0]
        expected += [expected[-1]] * (4 - len(expected))  # short items: 'gray-clip', 'single'
        assert len(frames) == 4
        for ours, ref in zip(frames, expected):
            np.testing.assert_array_equal(ours, ref)
        assert label == label2idx[info["meta_data"][0]["label"]]
    single = [k for k, (id_, _) in enumerate(dataset.items) if id_ == "single"][0]
    img, label = GulpImageDataset(directory)[single]
    np.testing.assert_array_equal(img, theirs["single"][0][0])
    assert label == label2idx["one frame"]


def test_image_dataset_on_a_gulpio2_directory(tmp_path):
    directory = write_dir(gulpio2.fileio, str(tmp_path / "g2img"),
                          [(i, {"label": str(i % 3)}, [image(i)]) for i in range(40)], LABEL2IDX)
    theirs = gulpio2.GulpDirectory(directory)
    images, labels = next(iter(DataLoader(GulpImageDataset(directory), batch_size=40,
                                          num_workers=2)))
    assert images.shape == (40, 20, 28, 3)
    np.testing.assert_array_equal(images, np.stack([theirs[i][0][0] for i in range(40)]))
    assert labels.tolist() == [expected_label(i) for i in range(40)]


# Transforms ------------------------------------------------------------------

def ramp(h, w, c=3):
    """An image of consecutive values (mod 256); ``c=None``: gray (``h×w``)."""
    shape = (h, w, c) if c else (h, w)
    return (np.arange(int(np.prod(shape))).reshape(shape) % 256).astype(np.uint8)


def video(n, h=12, w=16):
    return [((ramp(h, w).astype(np.int64) + 17 * k) % 256).astype(np.uint8) for k in range(n)]


def test_compose_and_compose_video():
    assert T.Compose([lambda x: x + 1, lambda x: x * 2])(1) == 4
    frames = video(3)
    originals = [f.copy() for f in frames]
    compose = T.ComposeVideo([lambda f: f[1:], lambda f: f * 0 + f[0, 0]],
                             [lambda v: v[::-1]])
    out = compose(frames)
    assert [f.shape for f in out] == [(11, 16, 3)] * 3
    for got, ref in zip(out, originals[::-1]):
        np.testing.assert_array_equal(got, np.broadcast_to(ref[1, 0], (11, 16, 3)))
    for f, ref in zip(frames, originals):  # the input list and frames are unchanged
        np.testing.assert_array_equal(f, ref)
    img = ramp(5, 6)
    assert T.ComposeVideo()(img) is img  # v1: an empty ComposeVideo passes anything through
    clip = np.stack(video(4))
    cropped = T.ComposeVideo([T.CenterCrop(4)])(clip)
    assert isinstance(cropped, np.ndarray) and cropped.shape == (4, 4, 4, 3)
    np.testing.assert_array_equal(cropped, clip[:, 4:8, 6:10])


@pytest.mark.parametrize("cls,flip", [(T.RandHorFlipVideo, lambda f: f[:, ::-1]),
                                      (T.RandVerFlipVideo, lambda f: f[::-1])])
def test_random_flips(cls, flip):
    frames = video(4)
    outcomes = set()
    for seed in range(12):
        random.seed(seed)
        flipped = random.random() < 0.5
        random.seed(seed)
        out = cls()(frames)
        expected = [flip(f) if flipped else f for f in frames]
        assert len(out) == 4
        for got, ref in zip(out, expected):
            np.testing.assert_array_equal(got, ref)
        outcomes.add(flipped)
    assert outcomes == {True, False}
    always = cls(p=1.0)(frames)
    np.testing.assert_array_equal(always[2], flip(frames[2]))
    assert all(f.flags.c_contiguous for f in always)
    assert cls(p=0.0)(frames) is frames
    gray = cls(p=1.0)([frames[0][:, :, 0]])
    np.testing.assert_array_equal(gray[0], flip(frames[0][:, :, 0]))


def test_normalize_and_unit_norm():
    img = np.ones([120, 120, 3])
    out = T.Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])(img)
    np.testing.assert_allclose(out, 1.0, atol=1e-6)  # v1's test
    img = np.zeros((2, 2, 3), np.uint8) + np.array([10, 20, 30], np.uint8)
    out = T.Normalize([10, 10, 10], [1, 2, 4])(img)
    np.testing.assert_allclose(out[0, 0], [0, 5, 5], rtol=1e-6)
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(T.UnitNorm()(x), (x - 1.5) / np.sqrt(1.25), rtol=1e-6)
    np.testing.assert_allclose(T.UnitNorm()(np.ones((4, 4, 3))), 0.0)  # v1's test


def test_center_crop():
    img = ramp(120, 60)
    np.testing.assert_array_equal(T.CenterCrop(20)(img), img[50:70, 20:40])
    gray = ramp(120, 60, None)
    np.testing.assert_array_equal(T.CenterCrop(20)(gray), gray[50:70, 20:40])
    # A (height, width) pair.
    np.testing.assert_array_equal(T.CenterCrop((10, 30))(img), img[55:65, 15:45])
    # v1 rounds half offsets to even: (61 - 20) / 2 = 20.5 -> 20.
    odd = ramp(61, 61)
    np.testing.assert_array_equal(T.CenterCrop(20)(odd), odd[20:40, 20:40])


def test_center_crop_scales_small_images_up():
    # v1 compared the crop's size with the image's swapped and then read
    # numpy's `size` as (w, h): it crashed or cut garbage here.
    img = ramp(20, 40)
    out = T.CenterCrop(30)(img)
    assert out.shape == (30, 30, 3)
    scaled = T.Scale(30)(img)  # short edge to 30: 30x60
    np.testing.assert_array_equal(out, scaled[:, 15:45])
    out = T.CenterCrop((30, 10))(img)  # taller than the image: scaled by 1.5
    assert out.shape == (30, 10, 3)
    np.testing.assert_array_equal(out, T._resize(img, 60, 30)[:, 25:35])


def test_random_crop():
    img = ramp(120, 60)
    random.seed(4)
    x1, y1 = random.randint(0, 60 - 30), random.randint(0, 120 - 30)
    random.seed(4)
    np.testing.assert_array_equal(T.RandomCrop(30)(img), img[y1:y1 + 30, x1:x1 + 30])
    random.seed(4)
    x1, y1 = random.randint(0, 60 - 20), random.randint(0, 120 - 10)
    random.seed(4)
    np.testing.assert_array_equal(T.RandomCrop((10, 20))(img), img[y1:y1 + 10, x1:x1 + 20])


@pytest.mark.parametrize("pad_method,mode", [
    (T.BORDER_CONSTANT, "constant"), (T.BORDER_REPLICATE, "edge"),
    (T.BORDER_REFLECT, "symmetric"), (T.BORDER_WRAP, "wrap"),
    (T.BORDER_REFLECT_101, "reflect"), ("edge", "edge"),
])
def test_random_crop_padding(pad_method, mode):
    img = ramp(8, 10)
    padded = np.pad(img, ((2, 2), (2, 2), (0, 0)), mode=mode)
    crop = T.RandomCrop(8, padding=2, pad_method=pad_method)
    corners = set()
    for seed in range(60):
        random.seed(seed)
        x1, y1 = random.randint(0, 14 - 8), random.randint(0, 12 - 8)
        random.seed(seed)
        np.testing.assert_array_equal(crop(img), padded[y1:y1 + 8, x1:x1 + 8])
        corners.add((x1, y1))
    # The right and bottom padding are used (v1 never did).
    assert max(x for x, _ in corners) == 6 and max(y for _, y in corners) == 4


def test_random_crop_asymmetric_padding_and_errors():
    img = ramp(6, 6)
    padded = np.pad(img, ((2, 4), (1, 3), (0, 0)))  # (left, top, right, bottom) = 1, 2, 3, 4
    for seed in range(5):
        random.seed(seed)
        x1, y1 = random.randint(0, 10 - 8), random.randint(0, 12 - 9)
        random.seed(seed)
        out = T.RandomCrop((9, 8), padding=(1, 2, 3, 4))(img)
        np.testing.assert_array_equal(out, padded[y1:y1 + 9, x1:x1 + 8])
    with pytest.raises(ValueError, match="does not fit"):
        T.RandomCrop(7)(img)
    with pytest.raises(ValueError):
        T.RandomCrop(4, pad_method=99)
    with pytest.raises(ValueError):
        T.RandomCrop(4, padding=(1, 2, 3))


def test_random_crop_video():
    frames = video(5, 30, 40)
    random.seed(9)
    x1, y1 = random.randint(0, 40 - 16), random.randint(0, 30 - 16)
    random.seed(9)
    out = T.RandomCropVideo(16)(frames)
    assert len(out) == 5
    for got, ref in zip(out, frames):
        np.testing.assert_array_equal(got, ref[y1:y1 + 16, x1:x1 + 16])
    random.seed(9)
    x1, y1 = random.randint(0, 44 - 16), random.randint(0, 34 - 16)
    random.seed(9)
    out = T.RandomCropVideo(16, padding=2)(frames)
    for got, ref in zip(out, frames):
        np.testing.assert_array_equal(got, np.pad(ref, ((2, 2), (2, 2), (0, 0)))[
            y1:y1 + 16, x1:x1 + 16])


def test_jitter_crop():
    img = ramp(120, 60)
    sums = set()
    for seed in range(20):
        random.seed(seed)
        w, h = random.choice([30, 20]), random.choice([30, 20])
        x1, y1 = random.randint(0, 60 - w), random.randint(0, 120 - h)
        random.seed(seed)
        out = T.JitterCrop([30, 20])(img)
        np.testing.assert_array_equal(out, img[y1:y1 + h, x1:x1 + w])
        sums.add(out.shape[0] + out.shape[1])
    assert sums == {40, 50, 60}  # v1's test: every size pair occurs
    random.seed(1)
    w, h = random.choice([8, 10]), random.choice([8, 10])
    x1, y1 = random.randint(0, 10 - w), random.randint(0, 10 - h)
    random.seed(1)
    small = ramp(6, 6)
    np.testing.assert_array_equal(T.JitterCrop([8, 10], padding=2)(small),
                                  np.pad(small, ((2, 2), (2, 2), (0, 0)))[y1:y1 + h,
                                                                          x1:x1 + w])
    with pytest.raises(ValueError, match="does not fit"):
        T.JitterCrop()(small)  # 256..168 crops of a 6x6 image


def test_jitter_crop_video():
    frames = video(4, 60, 120)
    random.seed(2)
    w, h = random.choice([30, 20]), random.choice([30, 20])
    x1, y1 = random.randint(0, 120 - w), random.randint(0, 60 - h)
    random.seed(2)
    out = T.JitterCropVideo([30, 20])(frames)
    assert len(out) == 4
    for got, ref in zip(out, frames):
        np.testing.assert_array_equal(got, ref[y1:y1 + h, x1:x1 + w])


def test_scale_sizes():
    # v1's test_scale.
    img = ramp(120, 60)
    assert T.Scale(30)(img).shape == (60, 30, 3)
    assert T.Scale((30, 30))(img).shape == (30, 30, 3)
    assert T.Scale((40, 10))(img).shape == (10, 40, 3)  # (width, height)
    assert T.Scale(30)(ramp(120, 60, None)).shape == (60, 30)
    for frame in video(3, 60, 120):
        assert T.Scale(30)(frame).shape == (30, 60, 3)
    assert T.Scale(7)(ramp(10, 23)).shape == (7, 16, 3)  # long edge rounded down
    assert T.Scale(60)(img) is img  # short edge already 60
    assert T.Scale(8)(ramp(16, 16)[:, :, :1]).shape == (8, 8, 1)
    with pytest.raises(TypeError):
        T.Scale(2.5)


def test_scale_honours_interpolation():
    # v1 handed the interpolation to cv2.resize as its `dst`: it was ignored.
    checker = np.array([[0, 255], [255, 0]], np.uint8)
    np.testing.assert_array_equal(T.Scale(4, T.INTER_NEAREST)(checker),
                                  np.kron(checker, np.ones((2, 2), np.uint8)))
    np.testing.assert_array_equal(T.Scale(4, "nearest")(checker),
                                  np.kron(checker, np.ones((2, 2), np.uint8)))
    ramp1d = np.array([[0, 100]], np.uint8)
    np.testing.assert_array_equal(T.Scale((4, 1), T.INTER_LINEAR)(ramp1d), [[0, 25, 75, 100]])
    np.testing.assert_array_equal(T.Scale((4, 1))(ramp1d), [[0, 25, 75, 100]])  # default
    blocks = np.repeat(np.repeat(np.array([[0, 40], [80, 120]], np.uint8), 2, 0), 2, 1)
    blocks[0, 0], blocks[1, 1] = 50, 30  # block means: 20, 40, 80, 120
    np.testing.assert_array_equal(T.Scale(2, T.INTER_AREA)(blocks), [[20, 40], [80, 120]])
    np.testing.assert_array_equal(T.Scale(2, T.INTER_NEAREST)(blocks), [[30, 40], [80, 120]])
    smooth = smooth_image()
    outs = [T.Scale(30, i)(smooth) for i in (T.INTER_NEAREST, T.INTER_LINEAR, T.INTER_CUBIC,
                                             T.INTER_AREA, T.INTER_LANCZOS4)]
    assert all(o.shape == (30, 40, 3) for o in outs)
    for a in range(5):
        for b in range(a + 1, 5):
            assert not np.array_equal(outs[a], outs[b])
    with pytest.raises(ValueError):
        T.Scale(10, 17)


def test_scale_floats_and_other_dtypes():
    ramp1d = np.array([[0.0, 100.0]], np.float32)
    out = T.Scale((4, 1))(ramp1d)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0, 25, 75, 100]], atol=1e-4)
    normalized = T.Normalize([0.5] * 3, [0.25] * 3)(smooth_image() / 255.0)
    np.testing.assert_allclose(T.Scale(30)(normalized),
                               T.Normalize([0.5] * 3, [0.25] * 3)(
                                   T.Scale(30)(smooth_image()) / 255.0), atol=0.05)
    wide = (np.arange(12).reshape(2, 6) * 1000).astype(np.uint16)
    assert T.Scale((3, 1), "area")(wide).tolist() == [[3500, 5500, 7500]]


def smooth_image(h=60, w=80):
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([127 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0), x * 3.0, y * 4.0], -1)
    img += np.random.default_rng(0).normal(0, 2, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def test_resize_errors_name_the_shape():
    with pytest.raises(ValueError, match="4x5x0"):
        T._resize(np.zeros((4, 5, 0), np.uint8), 2, 2)
    with pytest.raises(ValueError, match=r"got shape \(4,\)"):
        T._resize(np.zeros(4, np.uint8), 2, 2)
    with pytest.raises(ValueError, match="int32"):
        gulp._gulp.resample(np.zeros((2, 2), np.int32), 1, 1, "box")
    with pytest.raises(ValueError, match="unknown filter 'cubic'"):
        gulp._gulp.resample(np.zeros((2, 2), np.uint8), 1, 1, "cubic")
    with pytest.raises(ValueError, match="do not fit in memory"):
        gulp._gulp.resample(np.zeros((2, 2), np.uint8), 2**31, 2**30, "box")


def test_transforms_do_not_need_pillow():
    # With PIL unimportable, every filter still works and gives the pixels
    # it gives here.
    code = (
        "import sys; sys.modules['PIL'] = None\n"
        "import numpy as np, gulp.transforms as T\n"
        "img = np.arange(7 * 9 * 3, dtype=np.uint8).reshape(7, 9, 3)\n"
        "outs = [T.Scale((5, 4), i)(img) for i in range(5)]\n"
        "print(np.concatenate([o.ravel() for o in outs]).tolist())\n"
        "assert 'PIL.Image' not in sys.modules\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    img = np.arange(7 * 9 * 3, dtype=np.uint8).reshape(7, 9, 3)
    here = np.concatenate([T.Scale((5, 4), i)(img).ravel() for i in range(5)])
    assert run.stdout.strip() == str(here.tolist())


def _pillow_13():
    """Pillow's Image module if it is Pillow 13 or later, else None."""
    image = pytest.importorskip("PIL.Image")
    major = int(image.__version__.split(".")[0])
    return image if major >= 13 else None


def pillow_resize(image, img, width, height, interpolation):
    """Pillow's resize of ``img``: as an ``L`` or ``RGB`` image, else channel
    by channel as ``L`` images (the arithmetic of every 8-bit band; an
    ``RGBA`` or ``LA`` image would be premultiplied by its alpha first)."""
    names = {T.INTER_NEAREST: "NEAREST", T.INTER_LINEAR: "BILINEAR", T.INTER_CUBIC: "BICUBIC",
             T.INTER_AREA: "BOX", T.INTER_LANCZOS4: "LANCZOS"}
    resample = getattr(image.Resampling, names[interpolation])
    if img.ndim == 2 or img.shape[2] == 3:
        return np.asarray(image.fromarray(img).resize((width, height), resample=resample))
    return np.stack([pillow_resize(image, img[:, :, c], width, height, interpolation)
                     for c in range(img.shape[2])], -1)


def resize_cases():
    """Images (random and smooth; 1 to 4 channels) and output sizes: every
    kind of one-axis and two-axis resize, shrinking and enlarging, with
    both pass orders of Pillow 13, and sizes down to 1 pixel."""
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (37, 53, 3), dtype=np.uint8),
              rng.integers(0, 256, (60, 24), dtype=np.uint8),
              rng.integers(0, 256, (21, 30, 4), dtype=np.uint8),
              rng.integers(0, 256, (1, 9, 2), dtype=np.uint8),
              rng.integers(0, 256, (300, 7, 1), dtype=np.uint8),
              smooth_image(), smooth_image(90, 33)[:, :, :1], smooth_image(17, 200)]
    for img in images:
        h, w = img.shape[:2]
        sizes = {(w, max(1, h // 3)), (w, h * 2 + 1), (max(1, w // 4), h), (w * 3 - 1, h),
                 (1, 1), (w, 1), (1, h), (max(1, w - 1), max(1, h // 2)),
                 (w + 5, max(1, h - 9)), (max(1, w // 2), h + 7), (w * 2, h * 2)}
        sizes |= {(int(a), int(b)) for a, b in rng.integers(1, 300, (12, 2))}
        for width, height in sorted(sizes):
            yield img, width, height


def test_resize_matches_pillow_exactly():
    # The Rust resize is Pillow's, pixel for pixel, for every filter, one
    # axis or two. Pillow 12 and earlier order the two passes otherwise
    # (always horizontal first; 12.2-12.3: vertical first for images over
    # 100 times taller than wide), so their two-axis pixels can be a level
    # apart; Pillow-SIMD's vector code rounds its weights otherwise.
    image = _pillow_13()
    if image is None:
        pytest.skip("needs Pillow 13: earlier versions order the two passes otherwise")
    checked = set()
    for img, width, height in resize_cases():
        one_axis = width == img.shape[1] or height == img.shape[0]
        for interpolation in (T.INTER_NEAREST, T.INTER_LINEAR, T.INTER_CUBIC, T.INTER_AREA,
                              T.INTER_LANCZOS4):
            theirs = pillow_resize(image, img, width, height, interpolation)
            ours = T._resize(img, width, height, interpolation)
            assert ours.shape == theirs.shape and ours.dtype == np.uint8
            diff = np.abs(ours.astype(int) - theirs.astype(int)).max()
            assert diff == 0, (img.shape, width, height, interpolation, diff)
            checked.add((interpolation, one_axis))
        # The Rust nearest-neighbour pixels, not only its positions.
        np.testing.assert_array_equal(gulp._gulp.resample(img, height, width, "nearest"),
                                      pillow_resize(image, img, width, height, T.INTER_NEAREST))
    assert len(checked) == 10  # each filter, on one axis and on two


def test_resize_of_an_array_view():
    # A crop or flip (a strided view) is read in its logical order.
    img = smooth_image()
    view = img[5:50:2, ::-1]
    np.testing.assert_array_equal(T._resize(view, 17, 9, T.INTER_CUBIC),
                                  T._resize(np.ascontiguousarray(view), 17, 9, T.INTER_CUBIC))


def test_public_names_and_docstrings():
    v1_names = ["Compose", "ComposeVideo", "RandHorFlipVideo", "RandVerFlipVideo", "Normalize",
                "UnitNorm", "CenterCrop", "RandomCrop", "RandomCropVideo", "JitterCrop",
                "JitterCropVideo", "Scale"]
    assert set(v1_names) <= set(T.__all__)
    import gulp.dataset
    import gulp.loader
    for module in (T, gulp.dataset, gulp.loader):
        assert module.__doc__
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, int):
                continue
            assert obj.__doc__, f"{module.__name__}.{name}"
            for attr, member in vars(obj).items() if isinstance(obj, type) else ():
                if callable(member) and (not attr.startswith("_") or attr in (
                        "__call__", "__getitem__", "__len__", "__iter__")):
                    assert member.__doc__, f"{module.__name__}.{name}.{attr}"
