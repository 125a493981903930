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


LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_STEP_ID",
               "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
               "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def gpus(monkeypatch):
    """A machine of 4 stubbed GPUs (no CUDA call is made) and no launcher;
    `gpus.current` is the process's current device."""
    from gulp import _launch
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_launch, "_warned", set())

    class State:
        current = 0
        set_to = None
    state = State()

    def set_device(d):
        state.set_to = state.current = torch.device(d).index
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: state.current)
    monkeypatch.setattr(torch.cuda, "set_device", set_device)
    state.env = monkeypatch
    return state


def test_cuda_is_the_local_ranks_gpu_under_a_launcher(gpus):
    import warnings
    cuda = lambda k: torch.device("cuda", k)  # noqa: E731
    assert gt.cuda_device("cuda") == cuda(0)  # no launcher: the current device
    assert gt.cuda_device("cpu") == torch.device("cpu")
    gpus.env.setenv("LOCAL_RANK", "2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gt.cuda_device("cuda") == cuda(2)
        assert gt.cuda_device("cuda:2") == cuda(2)
        # The dataset's transfer too, decided at the first batch.
        data = gt.ClipDataset("unused", device="cuda")
        assert data.transfer.device == cuda(2) and data.transfer.pin_memory
        # srun's SLURM_LOCALID, where torchrun's variable is not.
        gpus.env.delenv("LOCAL_RANK")
        for k, v in {"SLURM_STEP_ID": "0", "SLURM_LOCALID": "3"}.items():
            gpus.env.setenv(k, v)
        assert gt.cuda_device("cuda") == cuda(3)
        gpus.current = 3  # set_device(3) by the script: agrees
        assert gt.cuda_device("cuda") == cuda(3)
    gpus.current = 1  # set_device(1): kept, with a warning, once
    with pytest.warns(UserWarning, match="chose cuda:1.*SLURM_LOCALID.*local rank 3"):
        assert gt.cuda_device("cuda") == cuda(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gt.cuda_device("cuda") == cuda(1)


def test_init_distributed_picks_nccl_and_the_gpu_where_cuda_is(gpus, monkeypatch):
    import torch.distributed as dist
    calls = []
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend, **kw: calls.append((backend, kw)))
    for k, v in {"SLURM_STEP_ID": "0", "SLURM_PROCID": "5", "SLURM_NTASKS": "8",
                 "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "4",
                 "SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "991234"}.items():
        gpus.env.setenv(k, v)
    rank, world, local, device = gt.init_distributed()
    assert (rank, world, local, device) == (5, 8, 1, torch.device("cuda", 1))
    assert gpus.set_to == 1
    assert calls == [("nccl", {"init_method": "env://", "rank": 5, "world_size": 8})]
    assert (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]) == ("gpu07", "16234")


def test_init_distributed_on_the_cpu_is_gloo(monkeypatch):
    import torch.distributed as dist
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")  # restored after the test
    monkeypatch.delenv("MASTER_ADDR")
    monkeypatch.setenv("MASTER_PORT", "0")
    monkeypatch.delenv("MASTER_PORT")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert not dist.is_initialized()
    try:
        assert gt.init_distributed() == (0, 1, 0, torch.device("cpu"))
        assert dist.get_backend() == "gloo" and dist.get_world_size() == 1
    finally:
        dist.destroy_process_group()


def run_train_ddp(command, labelled_dir, tmp_path):
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU fallback, as on this machine
    log = str(tmp_path / "train.log")
    # The package as this Python finds it (installed, or on PYTHONPATH).
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(command + [labelled_dir, log, "--epochs", "1", "--threads", "1",
                                     "--eval", labelled_dir],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, log


def test_the_guides_script_runs_from_the_package(labelled_dir, tmp_path):
    """`python -m gulp.examples.train_ddp` (one process: a process group of
    1, gloo on the CPU) trains an epoch and evaluates every clip once; under
    torchrun on 2 ranks (where torchrun is beside this Python) too."""
    import glob
    import json
    import shutil
    import sys
    (tmp_path / "one").mkdir()
    out, log = run_train_ddp([sys.executable, "-m", "gulp.examples.train_ddp"], labelled_dir,
                             tmp_path / "one")
    assert "rank 0/1 on cpu: finished" in out and "over 16 clips" in out, out
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    if torchrun is None:
        pytest.skip("torchrun is not beside this Python")
    (tmp_path / "two").mkdir()
    out, log = run_train_ddp([torchrun, "--standalone", "--nproc_per_node", "2", "-m",
                              "gulp.examples.train_ddp"], labelled_dir, tmp_path / "two")
    assert "over 16 clips" in out, out
    served = [json.loads(line) for f in glob.glob(f"{log}.eval.rank*") for line in open(f)]
    assert sorted(e["id"] for e in served if not e["padding"]) == sorted(f"v{k}" for k in range(16))


def test_an_evaluation_pass_counts_every_clip_once(labelled_dir):
    """gulp.torch's evaluation recipe: drop_last=False, with_batch=True and
    the padding mask; summed over 3 ranks, every clip once."""
    counted = 0
    for rank in range(3):
        data = gt.ClipDataset(labelled_dir, frames=4, resize=64, size=56, crop="center",
                              flip=False, shuffle=False, batch_size=5, drop_last=False,
                              rank=rank, world_size=3, with_batch=True)
        for frames, labels, batch in data:
            keep = ~torch.from_numpy(batch.padding)
            counted += int(keep.sum())
    assert counted == 16
