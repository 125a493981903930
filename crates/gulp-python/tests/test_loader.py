"""gulp.ClipLoader on real frames in a directory written by the real gulpio2."""

import gc
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys

import numpy as np
import pytest

import gulp
import gulpio2
from conftest import ffmpeg_frames
from gulp import _gulp

SOURCES = ["testsrc2", "mandelbrot", "smptebars", "rgbtestsrc"]
LABELS = {"testsrc2": "bars-a", "mandelbrot": "fractal", "smptebars": "bars-b", "rgbtestsrc": "rgb"}
LENGTHS = [3, 5, 8, 11, 16, 20, 25, 7, 9, 13, 4, 30]


def meta_of(k, label, n):
    """Item k's meta: its label and frame count, keys for every target form
    (item 5 has no "score"), and two segments (in frames) with keys of
    their own."""
    meta = {"label": label, "n": n, "big": int(k >= 9), "verb_class": k % 3,
            "noun_class": 20 + k % 5, "tags": [k % 4, (k + 1) % 4],
            "segments": [{"start": 0, "end": max(1, n // 2), "verb_class": 9},
                         {"start": n // 2, "end": n, "label": "rgb"}]}
    if k != 5:
        meta["score"] = k * 0.5
    return meta


def write_clips(directory, items, per_chunk, label2idx):
    """`items` (id, label, frames) written by gulpio2, `per_chunk` a chunk,
    with meta_of's meta."""
    os.makedirs(directory)
    gd = gulpio2.GulpDirectory(directory)
    metas = {}
    for c, chunk in enumerate(gd.new_chunks((len(items) + per_chunk - 1) // per_chunk)):
        with chunk.open("wb"):
            for k in range(c * per_chunk, min(len(items), (c + 1) * per_chunk)):
                vid, label, fr = items[k]
                metas[vid] = meta_of(k, label, len(fr))
                chunk.append(vid, metas[vid], fr)
    with open(os.path.join(directory, "label2idx.json"), "w") as f:
        json.dump(label2idx, f)
    return metas


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    """12 items of 3 to 30 frames of 160x120, 4 labels, in 3 chunks written
    by gulpio2, and a label2idx.json numbering the labels."""
    frames = {s: ffmpeg_frames(s, (160, 120), 30) for s in SOURCES}
    directory = str(tmp_path_factory.mktemp("clips") / "gulp")
    items = []
    for k, n in enumerate(LENGTHS):
        src = SOURCES[k % 4]
        items.append((f"video-{k:02d}", LABELS[src], frames[src][:n]))
    label2idx = {label: i for i, label in enumerate(sorted(set(LABELS.values())))}
    write_clips(directory, items, 4, label2idx)
    return directory, items, label2idx


@pytest.fixture(scope="module")
def other_dir(tmp_path_factory, clip_dir):
    """A second directory: 5 items of 6 to 14 frames, its own label2idx.json;
    and the meta of every item of both directories."""
    frames = {s: ffmpeg_frames(s, (160, 120), 14) for s in SOURCES[:2]}
    items = [(f"other-{k}", LABELS[SOURCES[k % 2]], frames[SOURCES[k % 2]][:6 + 2 * k])
             for k in range(5)]
    directory = str(tmp_path_factory.mktemp("other") / "gulp")
    metas = write_clips(directory, items, 3, {"fractal": 0, "bars-a": 1})
    path, first, label2idx = clip_dir
    metas.update({vid: meta_of(k, label, len(fr)) for k, (vid, label, fr) in enumerate(first)})
    return directory, metas


def documented(sampling, t, n, step=1, clip=0, clips=1):
    """The documented indices (docs/loader.md) of evaluation clips."""
    if sampling == "window":
        span = (t - 1) * step + 1
        if span >= n:
            start = 0
        elif clips > 1:
            start = (2 * clip * (n - span) + clips - 1) // (2 * (clips - 1))
        else:
            start = (n - span) // 2
        return [min(start + i * step, n - 1) for i in range(t)]
    if sampling == "segments":
        frac = (clip + 0.5) / clips
        out = []
        for i in range(t):
            lo = i * n // t
            hi = max(math.ceil((i + 1) * n / t), lo + 1) - 1
            out.append(min(max(math.floor((i + frac) * n / t), lo), hi, n - 1))
        return out
    if sampling == "uniform":
        if t == 1:
            return [(n - 1) // 2]
        return [(2 * i * (n - 1) + (t - 1)) // (2 * (t - 1)) for i in range(t)]
    raise ValueError(sampling)


def eval_loader(path, **kw):
    opts = dict(frames=4, sampling="segments", resize=None, size=(96, 128), crop="center",
                flip=False, batch_size=4, shuffle=False, drop_last=False, threads=2)
    opts.update(kw)
    return gulp.ClipLoader(path, **opts)


@pytest.mark.parametrize("sampling,t,step", [("segments", 4, 1), ("segments", 8, 1),
                                             ("window", 4, 1), ("window", 5, 3),
                                             ("uniform", 6, 1), ("uniform", 1, 1)])
def test_sampling_modes_return_the_documented_indices(clip_dir, sampling, t, step):
    path, items, _ = clip_dir
    loader = eval_loader(path, frames=t, sampling=sampling, step=step)
    seen = 0
    for batch in loader:
        assert batch.indices.shape == (len(batch), t)
        for k, vid in enumerate(batch.ids):
            n = len(items[seen][2])
            assert vid == items[seen][0]
            assert batch.indices[k].tolist() == documented(sampling, t, n, step), (vid, n)
            seen += 1
    assert seen == len(items)


def test_evaluation_clips_are_spread_over_the_item(clip_dir):
    path, items, _ = clip_dir
    loader = eval_loader(path, frames=3, sampling="window", clips=3, batch_size=9)
    batch = next(iter(loader))
    assert batch.ids[:3] == ["video-00"] * 3 and batch.views[:3].tolist() == [0, 1, 2]
    for k in range(9):
        n = len(items[k // 3][2])
        assert batch.indices[k].tolist() == documented("window", 3, n, 1, k % 3, 3)
    # Training draws random windows inside the item.
    train = gulp.ClipLoader(path, frames=4, sampling="dense", step=2, resize=None,
                            size=(64, 64), crop="random", batch_size=12, threads=1, seed=3)
    for k, idx in enumerate(next(iter(train)).indices):
        assert len(idx) == 4 and idx.min() >= 0
        assert (np.diff(idx) >= 0).all()


def test_centre_clips_equal_gulpio2_frames(clip_dir):
    path, items, _ = clip_dir
    g2 = gulpio2.GulpDirectory(path)
    loader = eval_loader(path, frames=5, sampling="uniform")
    clips = 0
    for batch in loader:
        assert batch.frames.dtype == np.uint8
        assert batch.frames.shape == (len(batch), 5, 96, 128, 3)
        for k, vid in enumerate(batch.ids):
            ref, _ = g2[vid]
            for j, fi in enumerate(batch.indices[k]):
                want = ref[fi][12:108, 16:144]
                got = batch.frames[k, j]
                diff = np.abs(got.astype(int) - want.astype(int))
                assert diff.max() <= 1, (vid, fi, diff.max())
            clips += 1
    assert clips == len(items)


def test_one_seed_gives_the_same_batches_with_1_and_2_threads(clip_dir):
    path, _, _ = clip_dir
    opts = dict(frames=6, sampling="segments", resize=100, size=80, crop="random_resized",
                flip=True, batch_size=5, shuffle=True, seed=11, drop_last=False)
    one = list(gulp.ClipLoader(path, threads=1, **opts))
    two = list(gulp.ClipLoader(path, threads=2, **opts))
    assert len(one) == len(two) == 3
    for a, b in zip(one, two):
        assert a.ids == b.ids
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_array_equal(a.frames, b.frames)
    other = list(gulp.ClipLoader(path, threads=2, **dict(opts, seed=12)))
    assert [b.ids for b in other] != [b.ids for b in one]


def distributed_split(n, rank, world_size, drop_last):
    """torch.utils.data.DistributedSampler's split of range(n) (shuffle=False)."""
    indices = list(range(n))
    if drop_last and n % world_size:
        num_samples = math.ceil((n - world_size) / world_size)
    else:
        num_samples = math.ceil(n / world_size)
    total = num_samples * world_size
    if not drop_last:
        pad = total - len(indices)
        if pad <= len(indices):
            indices += indices[:pad]
        else:
            indices += (indices * math.ceil(pad / len(indices)))[:pad]
    else:
        indices = indices[:total]
    return indices[rank:total:world_size]


@pytest.mark.parametrize("world_size", [2, 5, 13])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_split_an_epoch_like_distributed_sampler(clip_dir, other_dir, world_size,
                                                       drop_last):
    path, items, _ = clip_dir
    ids = [vid for vid, _, _ in items]
    try:
        from torch.utils.data import DistributedSampler
    except ImportError:
        DistributedSampler = None
    union = []
    for rank in range(world_size):
        loader = eval_loader(path, frames=1, batch_size=1, rank=rank, world_size=world_size,
                             drop_last=drop_last)
        got = [b.ids[0] for b in loader]
        want = distributed_split(len(ids), rank, world_size, drop_last)
        if DistributedSampler is not None:
            want_torch = list(DistributedSampler(range(len(ids)), num_replicas=world_size,
                                                 rank=rank, shuffle=False, drop_last=drop_last))
            assert want_torch == want
        assert got == [ids[i] for i in want]
        union += got
        # Shuffled: the same sizes, and the ranks together cover the epoch.
        shuffled = eval_loader(path, frames=1, batch_size=1, rank=rank, world_size=world_size,
                               drop_last=drop_last, shuffle=True, seed=5)
        assert len(shuffled) == len(want)
    if not drop_last:
        assert set(union) == set(ids)
    covered = set()
    for rank in range(world_size):
        covered |= {b.ids[0] for b in eval_loader(path, frames=1, batch_size=1, rank=rank,
                                                    world_size=world_size, drop_last=drop_last,
                                                    shuffle=True, seed=5)}
    assert len(covered) == (len(ids) if not drop_last else len(ids) // world_size * world_size)
    # Mixtures, subsets, segments: the ranks share the positions of the
    # epoch as they share a directory's items.
    for name in DATA[1:]:
        sources, extra = data(name, clip_dir, other_dir)
        positions, n = [], None
        for rank in range(world_size):
            loader = eval_loader(sources, frames=1, batch_size=1, rank=rank, shuffle=True,
                                 seed=5, world_size=world_size, drop_last=drop_last, **extra)
            n = loader.samples_per_epoch
            positions += [int(p) for b in loader for p in b.positions]
        per_rank = n // world_size if drop_last else -(-n // world_size)
        assert sorted(positions) == list(range(per_rank * world_size)), name


DATA = ["one directory", "mixture, where, balanced", "segments, ids, weights"]


def data(name, clip_dir, other_dir):
    """The sources and data options of a loader: one directory; a mixture by
    weight with a where= subset, balanced classes and an epoch of a fixed
    size; a mixture of segments (repeat, choose) with an id subset, per-item
    weights and two keys as the target."""
    path, _, _ = clip_dir
    other, _ = other_dir
    if name == "one directory":
        return path, {}
    if name == "mixture, where, balanced":
        return ([gulp.Source(path, weight=0.7, where=lambda m: m["n"] != 8),
                 gulp.Source(other, weight=0.3)],
                dict(sampler="balanced", target="big", samples_per_epoch=14))
    return ([gulp.Source(path, repeat=1.5, ids=["video-01", "video-04", "video-07"]),
             gulp.Source(other, choose=4, weights={f"other-{k}": float(k) for k in range(5)})],
            dict(segments="segments", target=("verb_class", "noun_class")))


@pytest.mark.parametrize("name", DATA)
def test_resume_after_k_batches_yields_exactly_the_rest(clip_dir, other_dir, name):
    sources, extra = data(name, clip_dir, other_dir)
    opts = dict(frames=4, resize=90, size=64, batch_size=2, seed=1, threads=2, drop_last=False,
                **extra)
    ref_loader = gulp.ClipLoader(sources, **opts)
    ref_loader.set_epoch(2)
    ref = list(ref_loader)
    n = len(ref)
    assert n == (ref_loader.samples_per_epoch + 1) // 2 and ref_loader.epoch == 3
    for k in sorted({0, 1, n - 2, n}):
        first = gulp.ClipLoader(sources, **opts)
        first.set_epoch(2)
        it = iter(first)
        for _ in range(k):
            next(it)
        state = first.state_dict()
        it.close()
        assert (state["epoch"], state["batch"]) == ((2, k) if k < n else (3, 0))
        state = json.loads(json.dumps(state))  # as saved in a checkpoint
        resumed = gulp.ClipLoader(sources, **opts)
        resumed.load_state_dict(state)
        resumed.set_epoch(state["epoch"])
        rest = list(resumed)
        if k == n:
            assert [b.epoch for b in rest] == [3] * n
            continue
        assert [b.index for b in rest] == list(range(k, n))
        for a, b in zip(rest, ref[k:]):
            assert a.ids == b.ids
            np.testing.assert_array_equal(a.targets, b.targets)
            np.testing.assert_array_equal(a.frames, b.frames)
    with pytest.raises(ValueError, match="seed is 1"):
        gulp.ClipLoader(sources, **dict(opts, seed=9)).load_state_dict(ref_loader.state_dict())
    with pytest.raises(gulp.InvalidInputError, match="options"):
        gulp.ClipLoader(sources, **dict(opts, frames=3)).load_state_dict(ref_loader.state_dict())


def test_a_state_of_other_data_is_refused_naming_what_differs(clip_dir, other_dir):
    path, _, _ = clip_dir
    opts = dict(frames=2, resize=72, size=56, batch_size=2, threads=1)
    state = gulp.ClipLoader(path, where=lambda m: m["n"] > 5, **opts).state_dict()
    for what, kw in [("subset", dict(where=lambda m: m["n"] > 8)),
                     ("sources", dict(samples_per_epoch=20)),
                     ("weights", dict(weights=lambda m: m["n"])),
                     ("targets", dict(target="verb_class"))]:
        loader = gulp.ClipLoader(path, **{**opts, "where": lambda m: m["n"] > 5, **kw})
        with pytest.raises(gulp.InvalidInputError, match=f"state's {what} is"):
            loader.load_state_dict(state)
    # A state saved before the loader had sources resumes (no such keys).
    old = {k: v for k, v in state.items() if k not in ("sources", "subset", "weights", "targets")}
    gulp.ClipLoader(path, where=lambda m: m["n"] > 5, **opts).load_state_dict(old)


def served_positions(batches):
    return [(int(p), i, b.frames[k]) for b in batches for k, (p, i) in
            enumerate(zip(b.positions, b.ids))]


@pytest.mark.parametrize("name", DATA)
@pytest.mark.parametrize("world_size,resume_on", [(4, 2), (4, 3), (2, 3), (3, 1)])
def test_a_state_resumes_on_another_number_of_ranks(clip_dir, other_dir, world_size, resume_on,
                                                     name):
    """Elastic resume: every rank yields k batches, the job restarts on
    another number of ranks from any old rank's state; over the epoch every
    position of the one-rank order is served once, with the same clip."""
    path, extra = data(name, clip_dir, other_dir)
    opts = dict(frames=3, resize=72, size=56, batch_size=1, seed=3, threads=1, drop_last=False,
                **extra)
    one = gulp.ClipLoader(path, **opts)
    n = one.samples_per_epoch
    reference = {p: (i, f) for p, i, f in served_positions(list(one))}
    assert sorted(reference) == list(range(n))
    served = []
    states = []
    for rank in range(world_size):
        loader = gulp.ClipLoader(path, rank=rank, world_size=world_size, **opts)
        it = iter(loader)
        served += served_positions([next(it)])
        it.close()
        states.append(json.loads(json.dumps(loader.state_dict())))
    assert {s["position"] for s in states} == {world_size}
    for rank in range(resume_on):
        loader = gulp.ClipLoader(path, rank=rank, world_size=resume_on, **opts)
        loader.load_state_dict(states[-1 - rank % world_size])
        loader.set_epoch(states[0]["epoch"])  # the training loop's call keeps the place
        served += served_positions(list(loader))
    counts = {}
    for p, i, f in served:
        counts[p] = counts.get(p, 0) + 1
        if p < n:
            assert reference[p][0] == i
            np.testing.assert_array_equal(reference[p][1], f)
    assert all(counts.get(p) == 1 for p in range(n)), counts
    assert all(p >= n for p in counts if p not in reference)  # only padding added


def test_threads_default_to_the_cores_per_local_rank(clip_dir, monkeypatch):
    path, _, _ = clip_dir
    cores = len(os.sched_getaffinity(0))
    assert gulp.ClipLoader(path, local_world_size=cores).threads == 1
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores))
    assert gulp.ClipLoader(path).threads == 1
    assert gulp.ClipLoader(path, threads=3).threads == 3
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert gulp.ClipLoader(path).threads == cores


def test_labels_follow_label2idx(clip_dir):
    path, items, label2idx = clip_dir
    by_id = {vid: label2idx[label] for vid, label, _ in items}
    loader = eval_loader(path, frames=2)
    for batch in loader:
        assert batch.labels.dtype == np.int64
        assert batch.labels.tolist() == [by_id[v] for v in batch.ids]
    # Another numbering given as a dict, and a meta key holding integers.
    mine = {label: 10 + i for i, label in enumerate(sorted(label2idx, reverse=True))}
    batch = next(iter(eval_loader(path, frames=2, labels=mine)))
    assert batch.labels.tolist() == [mine[items[k][1]] for k in range(4)]
    batch = next(iter(eval_loader(path, frames=2, label_key="n")))
    assert batch.labels.tolist() == [len(items[k][2]) for k in range(4)]
    with pytest.raises(ValueError, match="not in"):
        eval_loader(path, labels={"rgb": 0})


def test_batches_are_numpy_arrays_without_a_copy(clip_dir):
    path, _, _ = clip_dir
    batch = next(iter(eval_loader(path)))
    frames = batch.frames
    assert frames.flags.c_contiguous and frames.flags.writeable
    assert np.shares_memory(np.from_dlpack(frames), frames)
    x, y = batch
    assert x is frames and y is batch.labels


def test_a_damaged_frame_raises_with_its_place_or_is_skipped(clip_dir, copy_dir):
    path, items, _ = clip_dir
    bad = copy_dir(path)
    meta = json.load(open(os.path.join(bad, "meta_0.gmeta")))
    loc, pad, length = meta["video-01"]["frame_info"][2]
    with open(os.path.join(bad, "data_0.gulp"), "r+b") as f:
        f.seek(loc + 300)
        f.write(b"\xff" * 800)
    with pytest.raises(gulp.DecodeError) as err:
        list(eval_loader(bad, frames=5, sampling="uniform"))
    message = str(err.value)
    assert "'video-01'" in message or '"video-01"' in message
    assert "frame 2" in message and f"byte {loc}" in message
    loader = eval_loader(bad, frames=5, sampling="uniform", on_error="skip")
    batches = list(loader)
    assert len(batches[0]) == 3 and "video-01" not in batches[0].ids
    assert batches[0].skipped[0][0] == "video-01"
    assert loader.skipped == 1
    assert sum(len(b) for b in batches) == len(items) - 1


def test_bad_options_are_value_errors(clip_dir):
    path, _, _ = clip_dir
    for kw in [dict(crop="diagonal"), dict(sampling="sparse"), dict(frames=0),
               dict(rank=2, world_size=2), dict(size=None), dict(on_error="ignore"),
               dict(threads=0)]:
        with pytest.raises(ValueError):
            eval_loader(path, **kw)
    with pytest.raises(gulp.GulpError, match="does not fit"):
        list(eval_loader(path, size=200))
    with pytest.raises(FileNotFoundError):
        gulp.ClipLoader(os.path.join(path, "missing"))


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def test_memory_is_flat_over_10_epochs(clip_dir):
    path, _, _ = clip_dir
    loader = gulp.ClipLoader(path, frames=8, resize=96, size=80, batch_size=4, threads=2,
                             prefetch=2, drop_last=False)
    for _ in range(2):  # warm-up: allocator pools, maps
        for batch in loader:
            pass
    gc.collect()
    before = rss_mb()
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:
            assert batch.frames.shape == (len(batch), 8, 80, 80, 3)
    del batch
    gc.collect()
    growth = rss_mb() - before
    assert growth < 8, f"RSS grew by {growth:.1f} MB over 10 epochs"


@pytest.fixture(scope="module")
def edge_dir(tmp_path_factory):
    """Items written by gulpio2 at the frame sizes where a crop at the last
    column or row once ended a rounding step past the DCT-scaled frame
    (500 px wide at these heights, with short edge 256 and a 224 crop), and
    clips of 160x120 to 1280x720."""
    sizes = [(500, h) for h in (205, 207, 218, 224, 240, 375)]
    sizes += [(160, 120), (176, 144), (320, 240), (640, 272), (720, 528), (1280, 720)]
    directory = str(tmp_path_factory.mktemp("edges") / "gulp")
    os.makedirs(directory)
    gd = gulpio2.GulpDirectory(directory)
    for c, chunk in enumerate(gd.new_chunks(2)):
        with chunk.open("wb"):
            for k, size in enumerate(sizes[c * 6:(c + 1) * 6]):
                # ffmpeg's sources round odd sizes to even: cut the rows.
                w, h = size
                frames = [f[:h].copy() for f in ffmpeg_frames(SOURCES[k % 4], (w, h + h % 2), 2)]
                chunk.append(f"{size[0]}x{size[1]}", {"label": SOURCES[k % 4]}, frames)
    with open(os.path.join(directory, "label2idx.json"), "w") as f:
        json.dump({s: i for i, s in enumerate(SOURCES)}, f)
    return directory, len(sizes)


@pytest.mark.parametrize("kw", [
    # The reports: random crops of images and of clips, training mode.
    dict(frames=1, resize=256, size=224, crop="random"),
    dict(frames=1, resize=None, size=224, crop="random_resized"),
    dict(frames=2, sampling="segments", resize=64, size=48, crop="random"),
    # The third of three crops ends on the last column (or row) every time.
    dict(frames=1, resize=256, size=224, crop="three", train=False),
])
def test_crops_at_the_frame_edge_decode_for_20_epochs(edge_dir, kw):
    path, n = edge_dir
    loader = gulp.ClipLoader(path, flip=True, batch_size=4, shuffle=True, seed=0, threads=2,
                             drop_last=False, on_error="raise", **kw)
    views = 3 if kw.get("crop") == "three" else 1
    for epoch in range(20):
        loader.set_epoch(epoch)
        served = sum(len(batch) for batch in loader)
        assert served == n * views


def served(loader):
    """(id, source, target row) of every clip of the current epoch."""
    return [(i, int(s), t) for b in loader for i, s, t in zip(b.ids, b.sources, b.targets)]


def test_a_mixture_epoch_holds_each_sources_share_exactly(clip_dir, other_dir):
    path, items, _ = clip_dir
    other, _ = other_dir
    for seed in range(3):
        loader = eval_loader([gulp.Source(path, weight=3), gulp.Source(other, weight=1)],
                             samples_per_epoch=16, shuffle=True, seed=seed, frames=1)
        assert loader.sources == [path, other] and loader.samples_per_epoch == 16
        for epoch in range(3):
            loader.set_epoch(epoch)
            got = served(loader)
            assert sum(s == 0 for _, s, _ in got) == 12 and sum(s == 1 for _, s, _ in got) == 4
            assert all(i.startswith(("video-", "other-")[s]) for i, s, _ in got)
    # repeat and choose: every item of the first twice, 3 distinct of the
    # second; paths and Sources mix.
    loader = eval_loader([gulp.Source(path, repeat=2), gulp.Source(other, choose=3)], frames=1)
    got = [i for i, _, _ in served(loader)]
    assert all(got.count(vid) == 2 for vid, _, _ in items)
    assert len([i for i in got if i.startswith("other-")]) == len(
        {i for i in got if i.startswith("other-")}) == 3
    assert len(served(eval_loader([path, other], frames=1))) == 12 + 5
    # Labels: each source its own index, or one shared.
    own = {i: int(t) for i, _, t in served(eval_loader([path, other], frames=1))}
    shared = {i: int(t) for i, _, t in served(eval_loader([path, other], frames=1,
                                                          shared_labels=True))}
    assert own["other-0"] == 1 and shared["other-0"] == shared["video-00"] == 0  # "bars-a"
    assert own["other-1"] == 0 and shared["other-1"] == shared["video-01"] == 2  # "fractal"


def test_ids_and_where_keep_exactly_the_chosen_items(clip_dir, tmp_path):
    path, items, _ = clip_dir
    chosen = ["video-07", "video-02", "video-10"]
    ids = [i for i, _, _ in served(eval_loader(path, ids=chosen))]
    assert ids == sorted(chosen)  # the directory's order
    listed = tmp_path / "val.txt"
    listed.write_text("# validation\nvideo-07\n\nvideo-02\n")
    assert [i for i, _, _ in served(eval_loader(path, ids=listed))] == ["video-02", "video-07"]
    assert [i for i, _, _ in served(eval_loader(path, ids=str(listed)))] == ["video-02", "video-07"]
    long = eval_loader(path, where=lambda meta: meta["n"] >= 11)
    assert [i for i, _, _ in served(long)] == [v for v, _, fr in items if len(fr) >= 11]
    assert long.items == 6
    with pytest.raises(gulp.InvalidInputError, match="video-99"):
        eval_loader(path, ids=["video-01", "video-99"])
    with pytest.raises(gulp.InvalidInputError, match=r"video-00.*where.*KeyError"):
        eval_loader(path, where=lambda meta: meta["missing"])
    # The image loader has the same options.
    images = gulp.ImageLoader(path, where=lambda meta: meta["n"] < 5, size=64, shuffle=False,
                              flip=False, crop="center", drop_last=False, batch_size=4)
    assert [i for b in images for i in b.ids] == ["video-00", "video-10"]


def test_balanced_and_weighted_sampling_count_exactly(clip_dir):
    path, items, _ = clip_dir
    # "big": 9 items of class 0, 3 of class 1.
    for spe, counts in [(None, [6, 6]), (11, [5, 6]), (40, [20, 20])]:
        loader = eval_loader(path, frames=1, sampler="balanced", target="big",
                             samples_per_epoch=spe, shuffle=True)
        for epoch in range(3):
            loader.set_epoch(epoch)
            labels = [int(t) for _, _, t in served(loader)]
            assert sorted([labels.count(0), labels.count(1)]) == counts
    # Weights: video-k weighs k, an epoch of 66 = 0 + ... + 11 samples.
    weights = {vid: float(k) for k, (vid, _, _) in enumerate(items)}
    for w in (weights, lambda meta: float(LENGTHS.index(meta["n"]))):
        loader = eval_loader(path, frames=1, weights=w, samples_per_epoch=66)
        got = [i for i, _, _ in served(loader)]
        assert all(got.count(vid) == k for k, (vid, _, _) in enumerate(items))
    with pytest.raises(gulp.InvalidInputError, match="exclude"):
        eval_loader(path, sampler="balanced", weights=weights)
    with pytest.raises(gulp.InvalidInputError, match="one class per sample"):
        eval_loader(path, sampler="balanced", target=("big", "n"))


def test_every_target_form_has_its_dtype_shape_and_values(clip_dir, other_dir):
    path, items, _ = clip_dir
    _, metas = other_dir

    def hot(tags):
        v = np.zeros(4, np.float32)
        v[tags] = 1
        return v

    forms = [
        (dict(target="verb_class"), np.int64, (), lambda m: m["verb_class"]),
        (dict(target=("verb_class", "noun_class")), np.int64, (2,),
         lambda m: [m["verb_class"], m["noun_class"]]),
        (dict(target="tags", num_classes=4), np.float32, (4,), lambda m: hot(m["tags"])),
        (dict(target="score", target_type="float", on_missing="skip"), np.float32, (),
         lambda m: m["score"]),
        (dict(target=lambda m: np.array([m["n"], m["verb_class"] / 2])), np.float32, (2,),
         lambda m: [m["n"], m["verb_class"] / 2]),
        (dict(target=lambda m: (m["n"], m["n"] * 2, True)), np.int64, (3,),
         lambda m: [m["n"], m["n"] * 2, 1]),
    ]
    for kw, dtype, shape, expect in forms:
        loader = eval_loader(path, **kw)
        seen = 0
        for batch in loader:
            assert batch.targets.dtype == dtype and batch.targets.shape == (len(batch),) + shape
            assert batch.labels is batch.targets
            for k, vid in enumerate(batch.ids):
                np.testing.assert_allclose(batch.targets[k], expect(metas[vid]), err_msg=str(kw))
                seen += 1
        assert seen == len(items) - loader.missing
        assert loader.missing == (1 if kw.get("on_missing") else 0)  # video-05 has no score
    frames, targets = next(iter(eval_loader(path, target="verb_class")))
    assert targets.dtype == np.int64
    with pytest.raises(gulp.InvalidInputError, match=r"video-05.*score"):
        eval_loader(path, target="score", target_type="float")
    with pytest.raises(gulp.InvalidInputError, match=r"video-02.*same dtype and shape"):
        eval_loader(path, target=lambda m: [1] * (1 + m["n"] % 2))
    with pytest.raises(gulp.InvalidInputError, match=r"tags.*0\.\.3"):
        eval_loader(path, target="tags", num_classes=3)


def test_segment_clips_fall_inside_their_segments(clip_dir, other_dir):
    path, items, _ = clip_dir
    _, metas = other_dir
    loader = eval_loader(path, frames=3, sampling="window", clips=2, batch_size=8,
                         segments="segments", target="verb_class")
    assert loader.samples_per_epoch == 2 * len(items)
    per_id = {}
    for batch in loader:
        for k, vid in enumerate(batch.ids):
            n = metas[vid]["n"]
            start, end = batch.segments[k].tolist()
            assert [start, end] in ([0, max(1, n // 2)], [n // 2, n]), (vid, start, end)
            assert all(start <= f < end for f in batch.indices[k]), (vid, batch.indices[k])
            # The segment's own key, else the item's.
            assert batch.targets[k] == (9 if start == 0 else metas[vid]["verb_class"])
            per_id[vid] = per_id.get(vid, 0) + 1
    assert per_id == {vid: 4 for vid, _, _ in items}  # 2 segments x 2 clips
    # Training: random clips, inside their segments.
    train = gulp.ClipLoader(path, frames=4, resize=72, size=56, segments="segments",
                            batch_size=6, threads=2, seed=4)
    for batch in train:
        for (start, end), idx in zip(batch.segments.tolist(), batch.indices):
            assert idx.min() >= start and idx.max() < end
    with pytest.raises(gulp.InvalidInputError, match=r"video-00.*chapters"):
        eval_loader(path, segments="chapters")
    assert eval_loader(path, segments="chapters", on_missing="skip").missing == len(items)


def test_epic_kitchens_ingest_gives_segments_with_verb_and_noun(tmp_path):
    """`gulp.ingest("epic-kitchens", ...)` on frame folders as EPIC ships
    them, then clips of each action with its verb and noun."""
    root = tmp_path / "EPIC"
    for video, source, n in [("P01_01", "testsrc2", 20), ("P02_03", "mandelbrot", 12)]:
        folder = root / video[:3] / "rgb_frames" / video
        folder.mkdir(parents=True)
        for k, frame in enumerate(ffmpeg_frames(source, (96, 72), n), 1):
            (folder / f"frame_{k:010d}.jpg").write_bytes(_gulp.encode_jpeg(frame))
    rows = [("P01_01", 1, 8, 3, 12), ("P02_03", 4, 12, 0, 7), ("P01_01", 10, 20, 4, 12)]
    csv = tmp_path / "EPIC_100_train.csv"
    csv.write_text("narration_id,participant_id,video_id,start_frame,stop_frame,verb_class,"
                   "noun_class,all_noun_classes\n" + "".join(
                       f"{v}_{k},{v[:3]},{v},{a},{b},{verb},{noun},\"[{noun}]\"\n"
                       for k, (v, a, b, verb, noun) in enumerate(rows)))
    out = str(tmp_path / "epic-gulp")
    report = gulp.ingest("epic-kitchens", csv, root, output=out)
    assert report["items"] == 2
    loader = gulp.ClipLoader(out, frames=4, sampling="uniform", resize=None, size=64,
                             crop="center", flip=False, shuffle=False, drop_last=False,
                             segments="segments", target=("verb_class", "noun_class"))
    batch = next(iter(loader))
    assert batch.ids == ["P01_01", "P01_01", "P02_03"]
    assert batch.targets.tolist() == [[3, 12], [4, 12], [0, 7]]
    # EPIC's frames 1..8 are the item's 0..7 (end excluded: 8).
    assert batch.segments.tolist() == [[0, 8], [9, 20], [3, 12]]
    assert batch.indices.tolist()[0] == [0, 2, 5, 7]


def test_bad_data_options_are_value_errors(clip_dir):
    path, _, _ = clip_dir
    for kw in [dict(sampler="stratified"), dict(on_missing="ignore"), dict(target_type="float"),
               dict(target="tags", target_type="multi_hot"), dict(target="x", num_classes=0),
               dict(target=("a", "b"), num_classes=3), dict(segments=gulp.Segments(fps=0.0)),
               dict(samples_per_epoch=0), dict(weights=[1.0]), dict(target=()),
               dict(target=lambda m: 1, num_classes=3)]:
        with pytest.raises(ValueError):
            eval_loader(path, **kw)
    with pytest.raises(ValueError, match="one of weight, repeat and choose"):
        gulp.Source(path, weight=1, repeat=2)
    with pytest.raises(ValueError, match="every source a weight"):
        eval_loader([gulp.Source(path, weight=1), path])
    with pytest.raises(ValueError, match="each gulp.Source its ids"):
        eval_loader([path, path], ids=["video-01"])


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    """12 images written by gulpio2 (one frame per item), 4 sizes, 3 labels."""
    sizes = [(200, 150), (160, 120), (320, 240), (258, 182)]
    directory = str(tmp_path_factory.mktemp("images") / "gulp")
    os.makedirs(directory)
    gd = gulpio2.GulpDirectory(directory)
    images = {}
    for c, chunk in enumerate(gd.new_chunks(2)):
        with chunk.open("wb"):
            for k in range(c * 6, (c + 1) * 6):
                size = sizes[k % 4]
                frame = ffmpeg_frames(SOURCES[k % 4], size, k + 1)[-1]
                label = SOURCES[k % 3]
                chunk.append(f"img-{k:02d}", {"label": label}, [frame])
                images[f"img-{k:02d}"] = label
    with open(os.path.join(directory, "label2idx.json"), "w") as f:
        json.dump({s: i for i, s in enumerate(SOURCES)}, f)
    return directory, images


def test_image_batches_are_b_h_w_3_and_centre_crops_are_exact(image_dir):
    path, images = image_dir
    loader = gulp.ImageLoader(path, size=(96, 128), crop="center", shuffle=False, flip=False,
                              batch_size=5, drop_last=False, threads=2)
    batches = list(loader)
    assert [len(b) for b in batches] == [5, 5, 2]
    assert batches[0].frames.shape == (5, 96, 128, 3) and batches[0].frames.flags.c_contiguous
    assert batches[0].indices.shape == (5,)
    decoded = gulpio2.GulpDirectory(path)
    for batch in batches:
        for k, id_ in enumerate(batch.ids):
            full = decoded[id_][0][0]
            h, w = full.shape[:2]
            y, x = (h - 96) // 2, (w - 128) // 2
            np.testing.assert_array_equal(batch.frames[k], full[y:y + 96, x:x + 128])
            assert batch.labels[k] == SOURCES.index(images[id_])


def test_image_evaluation_resizes_the_short_edge_then_crops_the_centre(image_dir):
    """The 256/224 pipeline (here 100/80) against Pillow's bilinear resize of
    the gulpio2-decoded image, then the centre crop: the same filter up to
    DCT scaling (docs/loader.md, "Pixels"), close on average (ffmpeg's test
    sources have one-pixel lines and text, where DCT scaling and the
    bilinear filter differ most at single pixels)."""
    from PIL import Image

    path, _ = image_dir
    loader = gulp.ImageLoader(path, resize=100, size=80, crop="center", shuffle=False,
                              flip=False, batch_size=12, drop_last=False)
    batch = next(iter(loader))
    decoded = gulpio2.GulpDirectory(path)
    for k, id_ in enumerate(batch.ids):
        full = decoded[id_][0][0]
        h, w = full.shape[:2]
        rw, rh = (100, round(h * 100 / w)) if w <= h else (round(w * 100 / h), 100)
        resized = np.asarray(Image.fromarray(full).resize((rw, rh), Image.BILINEAR))
        y, x = (rh - 80) // 2, (rw - 80) // 2
        diff = np.abs(batch.frames[k].astype(int) - resized[y:y + 80, x:x + 80])
        assert diff.mean() <= 4, (id_, diff.mean())


def test_image_training_is_deterministic_split_and_resumable(image_dir):
    path, _ = image_dir
    opts = dict(size=64, batch_size=2, seed=5, drop_last=False)
    one = [(b.ids, b.frames.copy()) for b in gulp.ImageLoader(path, threads=1, **opts)]
    two = [(b.ids, b.frames.copy()) for b in gulp.ImageLoader(path, threads=2, **opts)]
    assert [i for i, _ in one] == [i for i, _ in two]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(one, two))
    served = [p for r in range(3) for b in gulp.ImageLoader(path, rank=r, world_size=3, **opts)
              for p in b.positions.tolist()]
    assert sorted(served) == list(range(12))
    first = gulp.ImageLoader(path, **opts)
    it = iter(first)
    next(it), next(it)
    state = first.state_dict()
    it.close()
    resumed = gulp.ImageLoader(path, **opts)
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert [b.ids for b in rest] == [i for i, _ in one[2:]]
    assert all(np.array_equal(b.frames, f) for b, (_, f) in zip(rest, one[2:]))


def test_image_loader_takes_one_frame_of_each_video(clip_dir):
    path, items, _ = clip_dir
    n = {vid: len(fr) for vid, _, fr in items}
    for frame, expect in [("middle", lambda k: (k - 1) // 2), (4, lambda k: min(4, k - 1))]:
        loader = gulp.ImageLoader(path, frame=frame, size=64, crop="center", shuffle=False,
                                  flip=False, batch_size=4, drop_last=False)
        for batch in loader:
            assert batch.frames.shape[1:] == (64, 64, 3)
            assert batch.indices.tolist() == [expect(n[i]) for i in batch.ids]
    random = gulp.ImageLoader(path, frame="random", size=64, batch_size=12, drop_last=False)
    drawn = next(iter(random))
    assert all(0 <= f < n[i] for f, i in zip(drawn.indices.tolist(), drawn.ids))
    for bad in ["first", -1]:
        with pytest.raises(gulp.InvalidInputError):
            gulp.ImageLoader(path, frame=bad)


def test_a_bad_image_raises_or_is_skipped(image_dir, copy_dir):
    path, images = image_dir
    bad = copy_dir(path)
    meta = json.load(open(os.path.join(bad, "meta_0.gmeta")))
    loc, _, _ = meta["img-03"]["frame_info"][0]
    with open(os.path.join(bad, "data_0.gulp"), "r+b") as f:
        f.seek(loc + 200)
        f.write(b"\xff" * 600)
    opts = dict(size=64, crop="center", shuffle=False, flip=False, batch_size=12, drop_last=False)
    with pytest.raises(gulp.DecodeError, match="img-03"):
        list(gulp.ImageLoader(bad, **opts))
    batch = next(iter(gulp.ImageLoader(bad, on_error="skip", **opts)))
    assert len(batch) == 11 and batch.skipped[0][0] == "img-03"


# One definition of each option: the signatures' defaults, the docstring's,
# the command line's and the errors' names all come from the Rust core.

def test_python_defaults_are_the_rust_defaults():
    import inspect
    for cls, kind in ((gulp.ClipLoader, "clips"), (gulp.ImageLoader, "images")):
        params = inspect.signature(cls.__init__).parameters
        defaults = _gulp.loader_defaults(kind)
        checked = [name for name in defaults if name in params]
        assert len(checked) >= 15, (kind, checked)
        for name in checked:
            given = params[name].default
            expected = defaults[name]
            if isinstance(given, tuple):
                assert given == pytest.approx(expected), (kind, name)
            else:
                assert given == expected, (kind, name, given, expected)


def test_command_line_defaults_are_the_rust_defaults():
    """`gulp bench --help` shows the loader's defaults as the command line
    spells them (sizes H,W), and every named option's names."""
    out = subprocess.run([sys.executable, "-m", "gulp", "bench", "--help"], check=True,
                         capture_output=True, text=True).stdout
    d = _gulp.loader_defaults("clips")
    size = d["size"] if isinstance(d["size"], tuple) else (d["size"], d["size"])
    for flag, value in [("--frames", d["frames"]), ("--sampling", d["sampling"]),
                        ("--resize", d["resize"]), ("--size", f"{size[0]},{size[1]}"),
                        ("--crop", d["crop"]), ("--batch-size", d["batch_size"]),
                        ("--seed", d["seed"]), ("--dct", d["dct"]),
                        ("--flip", str(d["flip"]).lower()),
                        ("--drop-last", str(d["drop_last"]).lower())]:
        help_of_flag = out.split(flag + " ", 1)[1].split("\n  -", 1)[0]
        assert f"[default: {value}]" in help_of_flag, (flag, help_of_flag)
    names = _gulp.option_names()
    for option in ("sampling", "crop", "shuffle", "dct", "codec"):
        for name in names[option]:
            assert name in out, (option, name)


@pytest.mark.parametrize("option", ["sampling", "crop", "shuffle", "sampler", "target_type",
                                    "on_error", "on_missing"])
def test_names_in_docstring_and_errors_come_from_one_list(clip_dir, option):
    path, _, _ = clip_dir
    names = _gulp.option_names()[option]
    listed = ", ".join(repr(n) for n in names)
    assert listed in gulp.ClipLoader.__doc__, option
    extra = {"target": "label"} if option == "target_type" else {}
    with pytest.raises(gulp.InvalidInputError) as err:
        eval_loader(path, **{option: "no-such-value"}, **extra)
    for name in names:
        assert f"'{name}'" in str(err.value), (option, str(err.value))


def test_ranks_come_from_the_launcher(clip_dir, monkeypatch):
    path, items, _ = clip_dir
    for var in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "SLURM_STEP_ID", "SLURM_PROCID",
                "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE"):
        monkeypatch.delenv(var, raising=False)
    alone = eval_loader(path)
    assert (alone.rank, alone.world_size) == (0, 1)
    assert "default" in repr(alone.rank)

    def positions(**kw):
        loader = eval_loader(path, **kw)
        return loader, [p for b in loader for p, pad in zip(b.positions.tolist(), b.padding)
                        if not pad]

    # torchrun's variables, nothing said in the code: each rank its share.
    served = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        loader, got = positions()
        assert (loader.rank, loader.world_size) == (rank, 2)
        assert repr(loader.world_size) == "2 (from RANK/WORLD_SIZE)"
        served += got
    assert sorted(served) == list(range(len(items))), "each position once over the ranks"
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")

    # srun's, for a task of a step (a batch script's own variables are not ranks).
    monkeypatch.setenv("SLURM_PROCID", "1")
    monkeypatch.setenv("SLURM_NTASKS", "3")
    assert eval_loader(path).world_size == 1
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    served = []
    for rank in range(3):
        monkeypatch.setenv("SLURM_PROCID", str(rank))
        loader, got = positions()
        assert (loader.rank, loader.world_size) == (rank, 3)
        assert "SLURM_PROCID" in repr(loader.rank)
        served += got
    assert sorted(served) == list(range(len(items)))

    # A value given wins; one that contradicts the launcher warns, naming both.
    with pytest.warns(UserWarning, match="world_size=1 was given, but the launcher"):
        loader = eval_loader(path, rank=0, world_size=1)
    assert (loader.world_size, repr(loader.world_size)) == (1, "1 (given)")
    assert len(loader) * 4 >= len(items)


def test_padding_marks_the_repeated_samples(clip_dir):
    path, items, _ = clip_dir
    n, world = len(items), 5  # 12 samples on 5 ranks: 3 padding positions
    served, padded = [], []
    for rank in range(world):
        for batch in eval_loader(path, rank=rank, world_size=world, drop_last=False):
            assert batch.padding.dtype == np.bool_ and batch.padding.shape == (len(batch),)
            for position, pad in zip(batch.positions.tolist(), batch.padding.tolist()):
                (padded if pad else served).append(position)
    assert sorted(served) == list(range(n))
    assert len(padded) == -n % world and all(p >= n for p in padded)


def test_col_expressions_keep_and_weigh_as_functions_do(clip_dir, tmp_path, monkeypatch):
    """where= and weights= written with gulp.col are evaluated in Rust and
    keep and weigh exactly what the same Python functions do, with and
    without an index file; misuse is an error that says what to write."""
    from gulp import col
    path, items, _ = clip_dir
    ids = lambda loader: [i for i, _, _ in served(loader)]  # noqa: E731
    cases = [
        (col("n") >= 11, lambda m: m["n"] >= 11),
        ((col("n") < 20) & col("label").is_in(["fractal", "rgb"]),
         lambda m: m["n"] < 20 and m["label"] in ("fractal", "rgb")),
        (~(col("label") == "bars-a") | (col("big") == 1),
         lambda m: m["label"] != "bars-a" or m["big"] == 1),
        (col("score").is_null(), lambda m: "score" not in m),
        (col("score") > 2, lambda m: m.get("score") is not None and m["score"] > 2),
    ]
    for expr, fn in cases:
        got = ids(eval_loader(path, where=expr))
        assert got == ids(eval_loader(path, where=fn)), expr
        assert 0 < len(got) < len(items), expr
    # Weights from a key and from a table of label values: the same epochs.
    for w, fn in [(col("score").fill_null(0.25), lambda m: m.get("score", 0.25)),
                  (col("label").replace({"rgb": 4.0, "fractal": 0.0}, default=1.0),
                   lambda m: {"rgb": 4.0, "fractal": 0.0}.get(m["label"], 1.0))]:
        a = eval_loader(path, frames=1, weights=w, samples_per_epoch=40, shuffle=True)
        b = eval_loader(path, frames=1, weights=fn, samples_per_epoch=40, shuffle=True)
        assert ids(a) == ids(b)
        b.load_state_dict(a.state_dict())  # the same subset and weights
    assert not {"video-01", "video-05", "video-09"} & set(
        ids(eval_loader(path, frames=1, samples_per_epoch=40,
                        weights=col("label").replace({"fractal": 0.0}, default=1.0))))
    # With an index file, label predicates and weights give the same batches.
    copy = str(tmp_path / "indexed")
    shutil.copytree(path, copy)
    monkeypatch.setenv("GULP_INDEX", "always")
    label_where = ~col("label").is_in(["bars-a", "bars-b"])
    label_weights = col("label").replace({"rgb": 3.0}, default=1.0)
    with_index = eval_loader(copy, where=label_where, weights=label_weights,
                             samples_per_epoch=20, shuffle=True)
    assert os.path.exists(os.path.join(copy, gulp.INDEX_FILE))
    monkeypatch.setenv("GULP_INDEX", "off")
    without = eval_loader(copy, where=label_where, weights=label_weights,
                          samples_per_epoch=20, shuffle=True)
    assert [(b.ids, b.frames.tobytes(), b.labels.tolist()) for b in with_index] == \
        [(b.ids, b.frames.tobytes(), b.labels.tolist()) for b in without]
    # Misuse says what to write; an item that cannot be compared is named.
    with pytest.raises(gulp.InvalidInputError, match=re.escape("&, | and ~")):
        eval_loader(path, where=(col("n") > 3) and (col("n") < 9))
    with pytest.raises(gulp.InvalidInputError, match="compare it"):
        eval_loader(path, where=col("label"))
    with pytest.raises(gulp.InvalidInputError, match=r"video-00.*where.*cannot be compared"):
        eval_loader(path, where=col("label") > 3)
    with pytest.raises(gulp.InvalidInputError, match=r"video-05.*weights.*no value of \"score\""):
        eval_loader(path, weights=col("score"))
    # The image loader and gulp.Source take them too.
    images = gulp.ImageLoader(gulp.Source(path, where=col("n") < 5), size=64, shuffle=False,
                              flip=False, crop="center", drop_last=False, batch_size=4)
    assert [i for b in images for i in b.ids] == ["video-00", "video-10"]


@pytest.mark.parametrize("kind", ["clips", "images"])
def test_an_evaluation_pass_counts_every_sample_once(clip_dir, image_dir, kind):
    """The evaluation recipe of the docs (drop_last=False, the padding mask
    applied) counts exactly the set's size, on one rank and summed over
    two, with a last batch that is not full; drop_last=True (the default,
    for training) would count fewer."""
    if kind == "clips":
        path, items, _ = clip_dir
        ids = sorted(i for i, _, _ in items)

        def loader(**ranks):
            return gulp.ClipLoader(path, frames=4, resize=64, size=56, crop="center", flip=False,
                                   shuffle=False, batch_size=5, drop_last=False, **ranks)
    else:
        path, images = image_dir
        ids = sorted(images)

        def loader(**ranks):
            return gulp.ImageLoader(path, resize=72, size=64, crop="center", flip=False,
                                    shuffle=False, batch_size=5, drop_last=False, **ranks)
    n = len(ids)
    for world in (1, 2, 5):
        counted, seen = 0, []
        for rank in range(world):
            for batch in loader(rank=rank, world_size=world):
                keep = ~batch.padding
                counted += int(keep.sum())  # what an accuracy's denominator sums
                seen += [i for i, k in zip(batch.ids, keep.tolist()) if k]
        assert counted == n and sorted(seen) == ids, (world, counted)
    cls = gulp.ClipLoader if kind == "clips" else gulp.ImageLoader
    dropped = sum(len(b) for b in cls(path, size=56, batch_size=5, shuffle=False, world_size=1,
                                      rank=0))
    assert dropped == 10 < n  # drop_last=True (the default) leaves the last partial batch out
