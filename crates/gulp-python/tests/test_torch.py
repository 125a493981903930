"""gulp.torch: one training step of a tiny model on batches from a gulp
directory. Skipped (with the reason) where torch is not installed; run by
scripts/torch-check.sh in a venv that has it."""

import os

import numpy as np
import pytest

import gulp

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/torch-check.sh)")
import gulp.torch as gt  # noqa: E402 (after the skip)

from conftest import ffmpeg_frames, write_chunks  # noqa: E402


@pytest.fixture(scope="module")
def labelled_dir(tmp_path_factory):
    sources = ["testsrc2", "mandelbrot", "smptebars", "rgbtestsrc"]
    items = []
    for k in range(16):
        src = sources[k % 4]
        items.append({"id": f"v{k}", "meta": {"label": src},
                      "frames": ffmpeg_frames(src, (128, 96), 10)})
    d = write_chunks(gulp.fileio, str(tmp_path_factory.mktemp("torch") / "d"), items, 8)
    with open(os.path.join(d, "label2idx.json"), "w") as f:
        f.write('{"testsrc2": 0, "mandelbrot": 1, "smptebars": 2, "rgbtestsrc": 3}')
    return d


def test_batches_are_tensors_sharing_the_loaders_memory(labelled_dir):
    loader = gulp.ClipLoader(labelled_dir, frames=4, resize=64, size=56, batch_size=4)
    batch = next(iter(loader))
    frames, labels = gt.to_tensors(batch)
    assert frames.dtype == torch.uint8 and tuple(frames.shape) == (4, 4, 56, 56, 3)
    assert labels.dtype == torch.int64 and labels.tolist() == batch.labels.tolist()
    frames[0, 0, 0, 0, 0] = 7
    assert batch.frames[0, 0, 0, 0, 0] == 7  # the same memory


def test_one_training_step_of_a_tiny_model(labelled_dir):
    torch.manual_seed(0)
    data = gt.ClipDataset(labelled_dir, frames=4, resize=64, size=56, batch_size=8, seed=1)
    assert len(data) == 2
    model = torch.nn.Sequential(
        torch.nn.Conv3d(3, 8, kernel_size=3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [p.detach().clone() for p in model.parameters()]
    loader = torch.utils.data.DataLoader(data, batch_size=None, num_workers=0)
    losses = []
    for frames, labels in loader:
        x = frames.permute(0, 4, 1, 2, 3).float() / 255  # [B, C, T, H, W]
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    state = data.state_dict()
    assert state["epoch"] == 1 and state["batch"] == 0


def test_image_dataset_gives_b_h_w_3_tensors(labelled_dir):
    data = gt.ImageDataset(labelled_dir, size=48, batch_size=8, seed=2)
    assert len(data) == 2
    images, labels = next(iter(data))
    assert images.dtype == torch.uint8 and tuple(images.shape) == (8, 48, 48, 3)
    assert labels.dtype == torch.int64 and tuple(labels.shape) == (8,)
    x = images.permute(0, 3, 1, 2).float() / 255  # [B, C, H, W]
    assert torch.isfinite(torch.nn.Conv2d(3, 4, 3)(x)).all()
