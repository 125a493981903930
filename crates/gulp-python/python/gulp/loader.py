"""GulpIO v1's ``gulpio.loader`` and ``gulpio.sampler``: a small numpy DataLoader.

``DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler,
num_workers, collate_fn, drop_last)`` takes v1's arguments and yields what
v1 yields: batches collated by ``np.stack``. ``num_workers=0`` loads in this
process; more load whole batches in that many worker processes, with
``2 × num_workers`` batches in flight, delivered in order.

What differs from v1, where v1 was wrong or broken:

* it runs on Python 3.10 and later (v1 used ``collections.Sequence``);
* numbers (labels) are collated into a numpy array, as v1's README said,
  instead of a plain list; dicts are collated key by key;
* each batch loaded in a worker seeds ``random`` and ``numpy.random`` from
  one draw of the main process's ``numpy.random`` and the batch's number,
  so workers do not repeat each other's random augmentations, and a seeded
  run gives the same batches with any number of workers;
* an error in a worker is raised again in the main process with its type
  and traceback (the next batch follows, as with ``num_workers=0``); a
  worker that dies raises ``BrokenProcessPool`` instead of hanging; the
  workers are stopped when the iteration ends or is abandoned;
* ``multiprocessing_context`` ('fork', 'spawn', 'forkserver') chooses how
  workers start; with 'spawn' and 'forkserver' the dataset must pickle (the
  ``gulp.dataset`` datasets do).

Why worker processes and not threads, although gulp's decoding and resizing
release the GIL: a dataset and its transforms draw from the global
``random`` and ``numpy.random`` states (v1's random offsets and crops do),
and a seeded run gives the same batches with any number of workers only
because each batch seeds them first. Threads share those two states, so two
batches loading at once would draw from each other's seeds; keeping them
apart would mean loading one batch at a time. Each worker process has its
own. (The dataset's own Python code would not run in parallel on threads
either.)
"""

from __future__ import annotations

import multiprocessing
import numbers
import random
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Iterator, NoReturn, Optional, Protocol, Sized

import numpy as np

from .errors import GulpTypeError, InvalidInputError

__all__ = [
    "DataLoader",
    "default_collate",
    "AbstractBaseSampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "BatchSampler",
]


# Types -----------------------------------------------------------------------

class _Dataset(Protocol):
    """What a DataLoader reads: samples by index, and a length."""

    def __getitem__(self, index: int, /) -> Any: ...

    def __len__(self) -> int: ...


class _Sampler(Protocol):
    """Dataset indices, with their number (a sampler, a ``range``, a list)."""

    def __iter__(self) -> Iterator[int]: ...

    def __len__(self) -> int: ...


class _BatchSampler(Protocol):
    """Batches of dataset indices, with their number."""

    def __iter__(self) -> Iterator[Sequence[int]]: ...

    def __len__(self) -> int: ...


#: Merges a list of samples into a batch.
_Collate = Callable[[list[Any]], Any]


# Samplers ------------------------------------------------------------------

class AbstractBaseSampler:
    """Base class of samplers: an iterable of dataset indices with a length."""

    def __iter__(self) -> Iterator[int]:  # pragma: no cover - interface
        """The indices."""
        raise NotImplementedError

    def __len__(self) -> int:  # pragma: no cover - interface
        """The number of indices."""
        raise NotImplementedError


class SequentialSampler(AbstractBaseSampler):
    """``0, 1, ..., len(data_source) - 1``, in order.

    Args:
        data_source: the dataset (only its length is used).
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        """The indices in order."""
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        """The number of indices."""
        return len(self.data_source)


class RandomSampler(AbstractBaseSampler):
    """Every index of ``data_source`` once, in a random order (numpy's global
    random state, a new order per iteration).

    Args:
        data_source: the dataset (only its length is used).
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        """The indices in a new random order."""
        return iter(np.random.permutation(len(self.data_source)).tolist())

    def __len__(self) -> int:
        """The number of indices."""
        return len(self.data_source)


class SubsetRandomSampler(AbstractBaseSampler):
    """The given indices, each once, in a random order (numpy's global random state).

    Args:
        indices (sequence): the dataset indices to draw from.
    """

    def __init__(self, indices: Sequence[int]) -> None:
        self.indices = indices

    def __iter__(self) -> Iterator[int]:
        """The indices in a new random order."""
        return (self.indices[i] for i in np.random.permutation(len(self.indices)).tolist())

    def __len__(self) -> int:
        """The number of indices."""
        return len(self.indices)


class BatchSampler:
    """Groups another sampler's indices into lists of ``batch_size``.

    Args:
        sampler: the sampler (any iterable of indices with a length).
        batch_size (int): indices per batch.
        drop_last (bool): drop the last batch if it is smaller than ``batch_size``.

    Example:
        >>> list(BatchSampler(range(10), batch_size=3, drop_last=False))
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler: _Sampler, batch_size: int, drop_last: bool) -> None:
        if int(batch_size) < 1:
            raise InvalidInputError(f"batch_size is 1 or more, not {batch_size}")
        self.sampler = sampler
        self.batch_size = int(batch_size)
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        """The batches: lists of indices."""
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        """The number of batches."""
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# Collation -----------------------------------------------------------------

def default_collate(batch: Sequence[Any]) -> Any:
    """Merges a list of samples into a batch: arrays by ``np.stack``, numbers
    into an array, strings into a list, and tuples, lists and dicts field by
    field (``[(frames, label), ...]`` gives ``[frames_batch, labels]``)."""
    elem = batch[0]
    if isinstance(elem, np.ndarray):
        return np.stack(batch)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, (numbers.Number, np.generic)):
        return np.asarray(batch)
    if isinstance(elem, Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in elem}
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise InvalidInputError("every sample of a batch must have the same number of fields")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise GulpTypeError(f"cannot collate samples of type {type(elem).__name__}")


# Workers -------------------------------------------------------------------

_worker: Optional[tuple[_Dataset, _Collate]] = None  # in a worker process


def _worker_init(dataset: _Dataset, collate_fn: _Collate) -> None:
    global _worker
    _worker = (dataset, collate_fn)


def _worker_batch(seed: int, indices: list[int]) -> Any:
    random.seed(seed)
    np.random.seed(seed)
    assert _worker is not None, "set by _worker_init"
    dataset, collate_fn = _worker
    return collate_fn([dataset[i] for i in indices])


class _LoaderIter:
    """One pass over a DataLoader (``len()`` is its number of batches)."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._collate_fn = loader.collate_fn
        self._batches = iter(loader.batch_sampler)
        self._length = len(loader.batch_sampler)
        self._pool: Optional[ProcessPoolExecutor] = None
        self._done = False
        if loader.num_workers > 0:
            self._pending: deque[Future[Any]] = deque()
            self._sent = 0
            self._seed = int(np.random.randint(0, 2**31 - 1))
            self._pool = ProcessPoolExecutor(
                loader.num_workers,
                mp_context=multiprocessing.get_context(loader.multiprocessing_context),
                initializer=_worker_init, initargs=(self._dataset, self._collate_fn),
            )
            for _ in range(2 * loader.num_workers):
                self._send()

    def _send(self) -> None:
        indices = next(self._batches, None)
        if indices is None or self._pool is None:
            return
        seed = np.random.SeedSequence([self._seed, self._sent]).generate_state(1)[0]
        self._pending.append(self._pool.submit(_worker_batch, int(seed), list(indices)))
        self._sent += 1

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> _LoaderIter:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        if self._pool is None:
            try:
                indices = next(self._batches)
            except StopIteration:
                self._done = True
                raise
            return self._collate_fn([self._dataset[i] for i in indices])
        if not self._pending:
            self.close()
            raise StopIteration
        future = self._pending.popleft()
        try:
            batch = future.result()
        except BrokenProcessPool:
            self.close()
            raise
        except Exception:
            self._send()  # a failed batch does not end the pass
            raise
        except BaseException:
            self.close()
            raise
        self._send()
        return batch

    def close(self) -> None:
        """Stops the workers; the iteration ends."""
        self._done = True
        pool, self._pool = self._pool, None
        if pool is not None:
            self._pending.clear()
            # Queued batches are cancelled; a worker exits after its batch.
            pool.shutdown(wait=False, cancel_futures=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __getstate__(self) -> NoReturn:
        raise GulpTypeError("a DataLoader iterator cannot be pickled")


class DataLoader:
    """Batches of a dataset, loaded in this process or in worker processes.

    Args:
        dataset: anything with ``__getitem__`` and ``__len__`` (e.g. a
            ``gulp.dataset.GulpVideoDataset``).
        batch_size (int): samples per batch. Default: 1.
        shuffle (bool): a new random order every pass (numpy's global random
            state). Default: False.
        sampler: the order of the indices; excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers (int): worker processes; 0 loads in this process. Default: 0.
        collate_fn (callable): merges a list of samples into a batch.
            Default: :func:`default_collate`.
        drop_last (bool): drop the last batch if it is smaller than
            ``batch_size``. Default: False.
        multiprocessing_context (str): how workers start: 'fork', 'spawn'
            or 'forkserver'; default: multiprocessing's default.
    """

    def __init__(self, dataset: _Dataset, batch_size: int = 1, shuffle: bool = False,
                 sampler: Optional[_Sampler] = None,
                 batch_sampler: Optional[_BatchSampler] = None, num_workers: int = 0,
                 collate_fn: _Collate = default_collate, drop_last: bool = False,
                 multiprocessing_context: Optional[str] = None) -> None:
        if batch_sampler is not None and (batch_size > 1 or shuffle or sampler is not None
                                          or drop_last):
            raise InvalidInputError("batch_sampler is mutually exclusive with batch_size, "
                                    "shuffle, sampler and drop_last")
        if sampler is not None and shuffle:
            raise InvalidInputError("sampler is mutually exclusive with shuffle")
        if int(num_workers) < 0:
            raise InvalidInputError(f"num_workers is 0 or more, not {num_workers}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.num_workers = int(num_workers)
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.multiprocessing_context = multiprocessing_context
        if batch_sampler is None:
            if sampler is None:
                sampler = RandomSampler(dataset) if shuffle else SequentialSampler(dataset)
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler = sampler
        self.batch_sampler = batch_sampler

    def __iter__(self) -> _LoaderIter:
        """A pass over the dataset: an iterator of batches."""
        return _LoaderIter(self)

    def __len__(self) -> int:
        """The number of batches of a pass."""
        return len(self.batch_sampler)
