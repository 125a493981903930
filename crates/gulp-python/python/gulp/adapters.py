"""gulpio2's adapter protocol for ``GulpIngestor``.

Subclass :class:`AbstractDatasetAdapter`: ``__len__`` gives the number of
items and ``iter_data(slice_element)`` yields ``{'id': ..., 'meta': dict,
'frames': [uint8 arrays]}`` for the items of the slice. For the datasets
gulpio2's adapter classes read (20BN JSON/CSV, video and image folders,
image lists, Kinetics, ActivityNet), ``gulp.ingest`` runs gulp's built-in
adapters, which decode and encode in Rust on every core.
"""

from abc import ABC, abstractmethod

__all__ = ["AbstractDatasetAdapter"]


class AbstractDatasetAdapter(ABC):
    """The items of a dataset, for ``GulpIngestor``."""

    @abstractmethod
    def iter_data(self, slice_element=None):
        """Yields ``{'id', 'meta', 'frames'}`` dicts for the items of
        ``slice_element`` (all items when ``None``)."""
        return NotImplementedError

    @abstractmethod
    def __len__(self):
        """The number of items."""
        return NotImplementedError
