"""gulpio2's adapter protocol for ``GulpIngestor``.

Subclass :class:`AbstractDatasetAdapter`: ``__len__`` gives the number of
items and ``iter_data(slice_element)`` yields ``{'id': ..., 'meta': dict,
'frames': [uint8 arrays]}`` for the items of the slice. For the datasets
gulpio2's adapter classes read (20BN JSON/CSV, video and image folders,
image lists, Kinetics, ActivityNet), ``gulp.ingest`` runs gulp's built-in
adapters, which decode and encode in Rust on every core.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Iterable, Optional

__all__ = ["AbstractDatasetAdapter"]


class AbstractDatasetAdapter(ABC):
    """The items of a dataset, for ``GulpIngestor``."""

    @abstractmethod
    def iter_data(self, slice_element: Optional[slice] = None) -> Iterable[dict[str, Any]]:
        """Yields ``{'id', 'meta', 'frames'}`` dicts for the items of
        ``slice_element`` (all items when ``None``)."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of items."""
