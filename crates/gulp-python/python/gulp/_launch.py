"""What the launcher says of this process, and the rules ``gulp.torch`` takes
from it, without torch: which GPU ``device="cuda"`` means, and the address
of a process group that ``srun`` started without torchrun.

The variables are read once, by the native module (gulp-loader's ``Launch``,
which the loaders' ranks come from too): torchrun's ``RANK``/``WORLD_SIZE``/
``LOCAL_RANK``/``LOCAL_WORLD_SIZE``, else those of a task of an ``srun``
step, ``SLURM_PROCID``/``SLURM_NTASKS``/``SLURM_LOCALID``/
``SLURM_NTASKS_PER_NODE``.
"""

from __future__ import annotations

import re
import warnings
from typing import Mapping, NamedTuple, Optional, Tuple

from . import _gulp

__all__ = ["Launch", "launch", "cuda_index", "first_host", "master_address"]


class Launch(NamedTuple):
    """What the launcher's variables say (``None`` where they say nothing)."""

    rank: Optional[int]
    world_size: Optional[int]
    #: The variables ``rank`` and ``world_size`` came from.
    ranks_from: Optional[str]
    local_rank: Optional[int]
    #: ``"LOCAL_RANK"`` (torchrun) or ``"SLURM_LOCALID"`` (srun).
    local_rank_from: Optional[str]
    local_world_size: Optional[int]


def launch() -> Launch:
    """What this process's launcher says, read now from the environment."""
    return Launch(*_gulp.launcher_env())


# (chosen, local rank) pairs already warned about: each contradiction once.
_warned: set[Tuple[int, int]] = set()


def cuda_index(launched: Launch, given: Optional[int], current: int, count: int) -> int:
    """The CUDA device a rank uses for ``device="cuda"`` (``given=None``) or
    ``device="cuda:k"`` (``given=k``), where ``current`` is the process's
    current device and ``count`` the devices it sees.

    - A device index given wins.
    - A process that has chosen its device (``torch.cuda.set_device``,
      seen as a current device other than 0) keeps it.
    - Otherwise the launcher's local rank (``LOCAL_RANK``, or Slurm's
      ``SLURM_LOCALID``) names the GPU, as torchrun's and Slurm's
      conventions have it: one rank per GPU of the node.
    - Without a local rank, or one that is not a device this process sees
      (each task given its own GPU through ``CUDA_VISIBLE_DEVICES``, e.g.
      ``srun --gpus-per-task 1``, sees it as device 0), the current device.

    A device chosen or given that is not the local rank's warns once
    (``UserWarning``): two ranks of a node on one GPU are usually a
    mistake, and run out of memory or run at half speed.
    """
    local = launched.local_rank
    chosen = given if given is not None else (current if current != 0 else None)
    if local is None or not 0 <= local < count:
        return current if chosen is None else chosen
    if chosen is None:
        return local
    if chosen != local and (chosen, local) not in _warned:
        _warned.add((chosen, local))
        how = f"cuda:{chosen} was given" if given is not None else \
            f"the process chose cuda:{chosen} (torch.cuda.set_device)"
        warnings.warn(f"{how}, but the launcher ({launched.local_rank_from}) says local rank "
                      f"{local}, whose GPU is cuda:{local}; using cuda:{chosen}",
                      UserWarning, stacklevel=3)
    return chosen


# One host of a Slurm node list: a name with an optional bracketed range list.
_HOST = re.compile(r"([^,\[]+)(?:\[([^\]]+)\])?")


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list (``SLURM_JOB_NODELIST``), as
    ``scontrol show hostnames`` gives it: ``gpu[03-05,09],cpu1`` -> ``gpu03``.

    >>> first_host("node[07-09,12]"), first_host("a1,b2"), first_host("gpu-[001-4]x")
    ('node07', 'a1', 'gpu-001')
    """
    m = _HOST.match(nodelist.strip())
    if m is None or not m.group(1):
        raise ValueError(f"not a Slurm node list: {nodelist!r}")
    prefix, ranges = m.group(1), m.group(2)
    if ranges is None:
        return prefix
    return prefix + ranges.split(",", 1)[0].split("-", 1)[0]


def master_address(env: Mapping[str, str]) -> Tuple[Optional[str], Optional[str]]:
    """``(MASTER_ADDR, MASTER_PORT)`` for a process group: the environment's,
    else, in a Slurm job, the first host of ``SLURM_JOB_NODELIST`` (or
    ``SLURM_NODELIST``) and port ``15000`` plus the last four digits of
    ``SLURM_JOB_ID`` (the same on every task of the job, and two jobs on
    one node rarely share it; Lightning's convention). ``None`` where
    neither says.

    >>> master_address({"SLURM_JOB_NODELIST": "gpu[2-3]", "SLURM_JOB_ID": "4242042"})
    ('gpu2', '17042')
    """
    addr, port = env.get("MASTER_ADDR"), env.get("MASTER_PORT")
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if addr is None and nodelist:
        addr = first_host(nodelist)
    job = env.get("SLURM_JOB_ID", "")
    if port is None and job.isdigit():
        port = str(15000 + int(job[-4:]))
    return addr, port

