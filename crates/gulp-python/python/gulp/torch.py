"""PyTorch face of :class:`gulp.ClipLoader`: batches as tensors, as models take them.

Importable only where ``torch`` is installed (gulp itself does not depend on
it)::

    import gulp.torch
    data = gulp.torch.ClipDataset("/data/ssv2-gulp", frames=8, resize=128, size=112,
                                  batch_size=8, seed=0, channels_first=True,
                                  device="cuda", dtype=torch.float16,
                                  mean=(0.45, 0.45, 0.45), std=(0.225, 0.225, 0.225))
    for epoch in range(epochs):
        data.set_epoch(epoch)
        for frames, labels in data:     # float16 [B, 3, T, H, W] on the GPU, int64 [B]
            loss = criterion(model(frames), labels)

Each batch is decoded into ``uint8`` by the loader's threads; the tensors
share memory with its numpy arrays (``torch.from_dlpack``; no copy). With
``device=``, the ``uint8`` pixels are copied to the device (from page-locked
memory, without blocking), and the cast to ``dtype``, the scaling to
``[0, 1]``, the normalisation by ``mean``/``std`` (in that ``[0, 1]``
scale, torchvision's convention) and the move of the channels are done there,
where they are cheapest (FFCV's ``ToTensor``/``ToDevice``/``NormalizeImage``,
DALI's ``crop_mirror_normalize``).

Ranks: under torchrun, Lightning, accelerate or srun the loader takes its
rank and world size from the launcher (see ``ClipLoader``); the loader is
made on first use, so a dataset built before the process group is set up
(Lightning's ``Trainer`` sets it up in ``fit``) still gets the ranks.

Devices: under torchrun or ``srun``, ``device="cuda"`` is the local rank's
GPU (``LOCAL_RANK``, else ``SLURM_LOCALID``), not the current device every
rank of a node shares until it calls ``torch.cuda.set_device``; a device the
process has chosen (``set_device``) or given (``"cuda:1"``) is kept, with a
warning (once) when it is not the local rank's (see :func:`cuda_device`).
:func:`init_distributed` sets the process group up from the launcher's
variables (NCCL and ``set_device`` where CUDA is, gloo otherwise).

Evaluation that counts every sample once, over all ranks::

    val = gulp.torch.ClipDataset(path, frames=8, resize=128, size=112, batch_size=8,
                                 crop="center", flip=False, shuffle=False,
                                 drop_last=False, with_batch=True, device="cuda")
    correct = counted = 0
    for frames, labels, batch in val:
        keep = ~torch.from_numpy(batch.padding).to(labels.device)  # the ranks' repeats
        correct += (model(frames).argmax(1) == labels)[keep].sum()
        counted += keep.sum()
    # then all_reduce correct and counted (torch.distributed) and divide

Labels of items without one are -1: give ``ignore_index=-1`` to
``torch.nn.functional.cross_entropy`` to leave them out of the loss.

The loader decodes on threads of its own: give ``ClipDataset`` to
``torch.utils.data.DataLoader`` (or torchdata's ``StatefulDataLoader``, which
saves and restores its position with a checkpoint) only with
``batch_size=None`` and ``num_workers=0``, or iterate over it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence, Tuple, Union

import torch as _torch
import torch.utils.data as _data

from . import _launch
from .clips import Batch, ClipLoader, ImageLoader
from .errors import GulpRuntimeError

if TYPE_CHECKING:
    from ._gulp import _Path

#: ``(frames, labels)``: the pixels (``uint8 [B, T, H, W, 3]`` as decoded, or
#: as ``channels_first``/``dtype`` ask) and the batch's targets (``int64
#: [B]`` labels by default; see ``ClipLoader``'s ``target=``).
_Tensors = Tuple[_torch.Tensor, _torch.Tensor]

__all__ = ["ClipDataset", "ImageDataset", "Transfer", "to_tensors", "tensors", "cuda_device",
           "init_distributed"]


def cuda_device(device: Union[str, int, _torch.device] = "cuda") -> _torch.device:
    """The device a rank puts its batches on for ``device``: under torchrun
    or ``srun``, ``"cuda"`` is the local rank's GPU (``LOCAL_RANK``, else
    ``SLURM_LOCALID``), not the current device that every rank of a node
    shares until it calls ``torch.cuda.set_device``; unless the process
    has chosen its device (``set_device``, seen as a current device other
    than 0) or the index is given (``"cuda:1"``), which are kept, with a
    warning (once) when they are not the local rank's. A local rank that
    is not a device the process sees (one GPU per task through
    ``CUDA_VISIBLE_DEVICES``) leaves the current device. Other devices
    (``"cpu"``, ``"mps"``) are returned as they are."""
    device = _torch.device(device)
    if device.type != "cuda":
        return device
    index = _launch.cuda_index(_launch.launch(), device.index, _torch.cuda.current_device(),
                               _torch.cuda.device_count())
    return _torch.device("cuda", index)


def init_distributed(backend: Optional[str] = None, **options: Any) -> Tuple[int, int, int, _torch.device]:
    """Initialises ``torch.distributed`` from the launcher and returns
    ``(rank, world_size, local_rank, device)``: torchrun's ``RANK``,
    ``WORLD_SIZE``, ``LOCAL_RANK``, else those of a task of an ``srun`` step
    (``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``), else rank 0 of
    1. ``MASTER_ADDR``/``MASTER_PORT`` are the environment's, else in a
    Slurm job the first host of ``SLURM_JOB_NODELIST`` and port 15000 + the
    last four digits of ``SLURM_JOB_ID``, else (one process) ``127.0.0.1``
    and a free port. The backend is NCCL where CUDA is available, gloo
    otherwise (or ``backend``); with CUDA it calls
    ``torch.cuda.set_device`` with the local rank's GPU (see
    :func:`cuda_device`) and ``device`` is that GPU, otherwise the CPU.
    ``options`` go to ``init_process_group`` (e.g. ``timeout``). A process
    group already initialised is kept. The process group's threads start
    with SIGUSR1 and SIGTERM blocked: Slurm's signals go to the main
    thread, where :class:`gulp.Requeue` catches them."""
    import os
    import signal

    import torch.distributed as dist

    launched = _launch.launch()
    cuda = _torch.cuda.is_available() and _torch.cuda.device_count() > 0
    device = cuda_device("cuda") if cuda else _torch.device("cpu")
    if cuda:
        _torch.cuda.set_device(device)
    if dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = launched.rank or 0, launched.world_size or 1
        addr, port = _launch.master_address(os.environ)
        if addr is None and world == 1:
            addr = "127.0.0.1"
        if port is None and world == 1:
            import socket
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = str(s.getsockname()[1])
        if addr is None or port is None:
            raise GulpRuntimeError(
                f"rank {rank} of {world} ({launched.ranks_from}): set MASTER_ADDR and MASTER_PORT "
                "(torchrun sets them; in a Slurm job gulp takes them from SLURM_JOB_NODELIST "
                "and SLURM_JOB_ID)")
        os.environ.setdefault("MASTER_ADDR", addr)
        os.environ.setdefault("MASTER_PORT", port)
        # The process group's threads are started with Slurm's signals
        # blocked, so that SIGUSR1 and SIGTERM reach the main thread, where
        # Python's handlers (gulp.Requeue) run: one taken by a gloo thread
        # ends the process with std::terminate when it exits.
        slurm = {signal.SIGUSR1, signal.SIGTERM}
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, slurm)
        try:
            dist.init_process_group(backend or ("nccl" if cuda else "gloo"),
                                    init_method="env://", rank=rank, world_size=world, **options)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    local = launched.local_rank
    if local is None:
        local = rank % (launched.local_world_size or world)
    return rank, world, local, device



class Transfer:
    """How a batch's ``uint8`` pixels become a model's input: copied to
    ``device`` (from page-locked memory, ``non_blocking``), cast to
    ``dtype`` (a float type: scaled to ``[0, 1]``, then ``(x - mean) / std``
    per channel when ``mean``/``std`` are given), channels moved before
    time (``[B, C, T, H, W]``, or ``[B, C, H, W]`` for images) when
    ``channels_first``. The steps after the copy run on the device."""

    __slots__ = ("_device", "_resolved", "dtype", "mean", "std", "channels_first", "pin_memory")

    def __init__(self, device: Union[None, str, _torch.device] = None,
                 dtype: Optional[_torch.dtype] = None,
                 mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                 channels_first: bool = False, pin_memory: bool = False) -> None:
        if (mean is None) != (std is None):
            raise ValueError("give mean and std together")
        if mean is not None and (dtype is None or not dtype.is_floating_point):
            raise ValueError("mean and std need a float dtype (e.g. dtype=torch.float32)")
        if dtype is not None and not dtype.is_floating_point and dtype != _torch.uint8:
            raise ValueError(f"dtype is uint8 or a float type, not {dtype}")
        self._device = None if device is None else _torch.device(device)
        self._resolved: Optional[_torch.device] = None
        self.dtype = dtype
        self.mean = None if mean is None else tuple(float(m) for m in mean)
        self.std = None if std is None else tuple(float(s) for s in std)
        self.channels_first = bool(channels_first)
        # A copy to a GPU is asynchronous only from page-locked memory.
        self.pin_memory = bool(pin_memory) or (self._device is not None
                                               and self._device.type == "cuda")

    @property
    def device(self) -> Optional[_torch.device]:
        """The device batches go to: ``"cuda"`` is the local rank's GPU
        under a launcher (:func:`cuda_device`), decided at the first batch
        (after a ``set_device`` that the script, or Lightning, calls after
        making the dataset)."""
        if self._device is None or self._device.type != "cuda":
            return self._device
        if self._resolved is None:
            self._resolved = cuda_device(self._device)
        return self._resolved

    def frames(self, pixels: _torch.Tensor) -> _torch.Tensor:
        """The model's input from ``uint8 [..., H, W, 3]`` pixels."""
        x = pixels
        if self.pin_memory:
            x = x.pin_memory()
        if self.device is not None:
            x = x.to(self.device, non_blocking=True)
        if self.channels_first:
            # [B, T, H, W, C] -> [B, C, T, H, W]; [B, H, W, C] -> [B, C, H, W].
            x = x.movedim(-1, 1)
        if self.dtype is not None and self.dtype.is_floating_point:
            x = x.to(self.dtype).div_(255)
            if self.mean is not None and self.std is not None:
                channel = 1 if self.channels_first else x.dim() - 1
                shape = [1] * x.dim()
                shape[channel] = len(self.mean)
                mean = _torch.tensor(self.mean, dtype=self.dtype, device=x.device).view(shape)
                std = _torch.tensor(self.std, dtype=self.dtype, device=x.device).view(shape)
                x = x.sub_(mean).div_(std)
        return x.contiguous() if self.channels_first else x

    def labels(self, labels: _torch.Tensor) -> _torch.Tensor:
        """The targets on the device."""
        if self.pin_memory:
            labels = labels.pin_memory()
        if self.device is not None:
            labels = labels.to(self.device, non_blocking=True)
        return labels


def to_tensors(batch: Batch, pin_memory: bool = False,
               transfer: Optional[Transfer] = None) -> _Tensors:
    """``(frames, labels)`` of a :class:`gulp.Batch` as tensors: without a
    copy by default (``pin_memory=True`` copies into page-locked memory for
    asynchronous transfers to a GPU), or as ``transfer`` says."""
    frames = _torch.from_dlpack(batch.frames)
    labels = _torch.from_numpy(batch.labels)
    transfer = transfer or Transfer(pin_memory=pin_memory)
    return transfer.frames(frames), transfer.labels(labels)


def tensors(loader: ClipLoader, pin_memory: bool = False,
            transfer: Optional[Transfer] = None) -> Iterator[_Tensors]:
    """Iterates over a :class:`gulp.ClipLoader` yielding ``(frames, labels)``
    tensors."""
    for batch in loader:
        yield to_tensors(batch, pin_memory, transfer)


class ClipDataset(_data.IterableDataset[Any]):
    """A :class:`gulp.ClipLoader` as a PyTorch ``IterableDataset`` of
    ``(frames, labels)`` batches (``(frames, labels, batch)`` with
    ``with_batch=True``: the :class:`gulp.Batch` beside the tensors, for its
    ``ids``, ``positions`` and ``padding``: an exact evaluation leaves out
    the clips with ``batch.padding`` set). With ``fps``, ``audio`` or
    ``texts``, each batch is a dict: ``frames``, ``labels``, ``times``
    (``float64 [B, T]``), ``audio`` (``float32 [B, C, S]``) and
    ``has_audio`` (``bool [B]``) on the frames' device, ``texts`` (a list
    of ``B`` strings); ``(dict, batch)`` with ``with_batch=True``.

    The arguments are ``ClipLoader``'s, plus what :class:`Transfer` takes
    (``device``, ``dtype``, ``mean``, ``std``, ``channels_first``,
    ``pin_memory``). The loader is made on first use (``len``, iteration,
    ``state_dict``), so that the ranks are those of the process group even
    when the dataset is built before it. ``set_epoch``, ``state_dict`` and
    ``load_state_dict`` are the loader's: torchdata's ``StatefulDataLoader``
    and a Lightning checkpoint save and restore the position through them.
    """

    #: The loader this dataset makes (``ImageLoader`` for images).
    _make: "type[ClipLoader]" = ClipLoader

    def __init__(self, path: _Path, pin_memory: bool = False, *,
                 device: Union[None, str, _torch.device] = None,
                 dtype: Optional[_torch.dtype] = None,
                 mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                 channels_first: bool = False, with_batch: bool = False,
                 **options: Any) -> None:
        super().__init__()
        self.path = path
        self.options = options
        self.transfer = Transfer(device, dtype, mean, std, channels_first, pin_memory)
        self.with_batch = with_batch
        self._loader: Optional[ClipLoader] = None
        self._epoch: Optional[int] = None
        self._state: Optional[Mapping[str, int]] = None

    @property
    def loader(self) -> ClipLoader:
        """The loader (made on first use)."""
        if self._loader is None:
            self._loader = type(self)._make(self.path, **self.options)
            if self._state is not None:
                self._loader.load_state_dict(self._state)
            if self._epoch is not None:
                self._loader.set_epoch(self._epoch)
        return self._loader

    def __iter__(self) -> Iterator[Any]:
        info = _data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise GulpRuntimeError(
                "gulp.torch.ClipDataset decodes on threads of its own: use it with "
                "DataLoader(num_workers=0, batch_size=None), or iterate over it directly")
        media = any(self.options.get(k) for k in ("fps", "audio", "texts"))
        for batch in self.loader:
            frames, labels = to_tensors(batch, transfer=self.transfer)
            out: Any = (frames, labels)
            if media:
                out = {"frames": frames, "labels": labels, **self._media(batch)}
                if self.with_batch:
                    out = (out, batch)
            elif self.with_batch:
                out = (frames, labels, batch)
            yield out

    def _media(self, batch: Batch) -> dict[str, Any]:
        """A batch's times, sound and texts as torch users collate them:
        tensors on the frames' device, texts a list of strings."""
        out: dict[str, Any] = {}
        device = self.transfer.device
        for key in ("times", "audio", "has_audio"):
            array = getattr(batch, key)
            if array is not None:
                tensor = _torch.from_numpy(array)
                out[key] = tensor if device is None else tensor.to(device, non_blocking=True)
        if batch.texts is not None:
            out["texts"] = list(batch.texts)
        return out

    def __len__(self) -> int:
        return len(self.loader)

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch (shuffle and random draws) of the next pass."""
        if self._loader is None:
            self._epoch = int(epoch)
        else:
            self._loader.set_epoch(epoch)

    def state_dict(self) -> dict[str, int]:
        """The loader's position, to save with a checkpoint."""
        return self.loader.state_dict()

    def load_state_dict(self, state: Mapping[str, int]) -> None:
        """Resumes the loader from ``state_dict()`` (kept until the loader
        is made, if it is not yet)."""
        if self._loader is None:
            self._state = dict(state)
            self._epoch = None
        else:
            self._loader.load_state_dict(state)


class ImageDataset(ClipDataset):
    """A :class:`gulp.ImageLoader` as a PyTorch ``IterableDataset`` of
    ``(images, labels)`` batches, ``uint8 [B, H, W, 3]`` (or as the
    :class:`Transfer` arguments ask, ``[B, 3, H, W]`` with
    ``channels_first``) and ``int64 [B]``; the arguments are
    ``ImageLoader``'s, plus :class:`ClipDataset`'s."""

    _make = ImageLoader
