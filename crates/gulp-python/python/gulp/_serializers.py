"""gulpio2's meta serializers that need nothing of the rest of the package
(``gulp.fileio`` adds the msgpack one, which reads through a directory)."""

from __future__ import annotations

import json
import pickle
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._gulp import _Path

__all__ = [
    "AbstractSerializer",
    "PickleSerializer",
    "JSONSerializer",
    "pickle_serializer",
    "json_serializer",
]


class AbstractSerializer(ABC):  # pragma: no cover - interface
    """Loads and dumps a chunk's meta dict."""

    @abstractmethod
    def load(self, file_name: _Path) -> Any:
        pass

    @abstractmethod
    def dump(self, thing: Any, file_name: _Path) -> None:
        pass


class PickleSerializer(AbstractSerializer):
    """gulpio2's pickle serializer (kept for API compatibility; nothing writes it)."""

    def load(self, file_name: _Path) -> Any:
        with open(file_name, "rb") as file_pointer:
            return pickle.load(file_pointer)

    def dump(self, thing: Any, file_name: _Path) -> None:
        with open(file_name, "wb") as file_pointer:
            pickle.dump(thing, file_pointer)


class JSONSerializer(AbstractSerializer):
    """GulpIO's JSON meta (what gulpio2 reads and writes)."""

    def load(self, file_name: _Path) -> Any:
        with open(file_name, "r") as file_pointer:
            return json.load(file_pointer, object_pairs_hook=OrderedDict)

    def dump(self, thing: Any, file_name: _Path) -> None:
        with open(file_name, "w") as file_pointer:
            json.dump(thing, file_pointer)


pickle_serializer = PickleSerializer()
json_serializer = JSONSerializer()
