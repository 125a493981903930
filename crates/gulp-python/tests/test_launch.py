"""The device a rank uses and the process group's address, from the
launcher's variables: the rules of gulp._launch, without torch (gulp.torch's
use of them, with the CUDA queries stubbed, is in test_torch.py)."""

import warnings

import pytest

from gulp import _launch
from gulp._launch import Launch, cuda_index, first_host, master_address

LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_STEP_ID",
               "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE")


@pytest.fixture
def no_launcher(monkeypatch):
    for var in LAUNCH_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(_launch, "_warned", set())
    return monkeypatch


def at(local, source="LOCAL_RANK"):
    return Launch(None, None, None, local, source, None)


def test_the_launcher_is_read_by_the_native_module(no_launcher):
    assert _launch.launch() == Launch(None, None, None, None, None, None)
    for k, v in {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}.items():
        no_launcher.setenv(k, v)
    assert _launch.launch() == Launch(3, 4, "RANK/WORLD_SIZE", 1, "LOCAL_RANK", 2)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        no_launcher.delenv(k)
    srun = {"SLURM_STEP_ID": "0", "SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1",
            "SLURM_NTASKS_PER_NODE": "4"}
    for k, v in srun.items():
        no_launcher.setenv(k, v)
    assert _launch.launch() == Launch(5, 8, "SLURM_PROCID/SLURM_NTASKS", 1, "SLURM_LOCALID", 4)
    # A batch script (no srun step) is one process, whatever Slurm's variables say.
    no_launcher.delenv("SLURM_STEP_ID")
    assert _launch.launch() == Launch(None, None, None, None, None, None)


def test_cuda_is_the_local_ranks_gpu_unless_the_process_chose_one(no_launcher):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # No launcher: the current device, whatever it is.
        assert cuda_index(at(None, None), None, current=0, count=4) == 0
        assert cuda_index(at(None, None), None, current=2, count=4) == 2
        # Under a launcher, a process that chose nothing: the local rank's GPU.
        assert cuda_index(at(3), None, current=0, count=4) == 3
        assert cuda_index(at(1, "SLURM_LOCALID"), None, current=0, count=2) == 1
        # It chose the local rank's GPU (set_device), or was given it: no warning.
        assert cuda_index(at(2), None, current=2, count=4) == 2
        assert cuda_index(at(2), 2, current=0, count=4) == 2
        # One GPU per task (CUDA_VISIBLE_DEVICES): local rank 1 sees it as device 0.
        assert cuda_index(at(1), None, current=0, count=1) == 0


def test_a_contradiction_is_kept_and_warns_once(no_launcher):
    with pytest.warns(UserWarning, match=r"chose cuda:2 \(torch.cuda.set_device\), but the launcher "
                                         r"\(LOCAL_RANK\) says local rank 1"):
        assert cuda_index(at(1), None, current=2, count=4) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cuda_index(at(1), None, current=2, count=4) == 2  # once
    with pytest.warns(UserWarning, match=r"cuda:3 was given, but the launcher \(SLURM_LOCALID\) "
                                         r"says local rank 0"):
        assert cuda_index(at(0, "SLURM_LOCALID"), 3, current=0, count=4) == 3


def test_the_address_of_a_slurm_job():
    assert first_host("gpu[03-05,09],cpu1") == "gpu03"
    assert first_host("node17") == "node17"
    assert first_host("a1,b2") == "a1"
    assert master_address({}) == (None, None)
    slurm = {"SLURM_JOB_NODELIST": "gpu[2-3]", "SLURM_JOB_ID": "4242042"}
    assert master_address(slurm) == ("gpu2", "17042")
    assert master_address({"SLURM_NODELIST": "n5", "SLURM_JOB_ID": "12"}) == ("n5", "15012")
    # The environment's wins.
    assert master_address(dict(slurm, MASTER_ADDR="head", MASTER_PORT="29500")) == ("head", "29500")
    with pytest.raises(ValueError):
        first_host("[1-2]")
