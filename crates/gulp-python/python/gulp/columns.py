"""Subsets and weights as expressions on meta keys, for ``where=`` and
``weights=`` of :class:`gulp.ClipLoader`, :class:`gulp.ImageLoader` and
:class:`gulp.Source`::

    from gulp import col
    gulp.ClipLoader(path, where=col("label").is_in(["Pushing", "Pulling"])
                                & (col("duration") >= 2.0))
    gulp.ClipLoader(path, weights=col("label").replace({"rare": 5.0}, default=1.0))

An expression is evaluated in Rust on each item's meta (``meta_data[0]``)
when the loader is made: no Python call per item (a function given instead
costs about a microsecond an item and a dict built for each), and on a
directory with an index file (``gulp index``), an expression on the label
key alone is evaluated once per label value, without reading the metas.

An item's value of ``key`` is ``meta.get(key)``: ``None`` when missing.
``==`` and ``!=`` compare as Python does (``2 == 2.0``); ``<``, ``<=``,
``>``, ``>=`` are false for ``None`` and an error for a value of another
kind (a string against a number), naming the item. Combine with ``&``,
``|`` and ``~`` (not ``and``, ``or``, ``not``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NoReturn, Optional

from .errors import InvalidInputError

__all__ = ["col", "Column", "Predicate", "WeightColumn"]


def _constant(value: Any) -> Any:
    if isinstance(value, (Column, Predicate, WeightColumn)):
        raise InvalidInputError(
            f"compare a key with a constant, not with another expression ({value!r})")
    return value


class Predicate:
    """Which items to keep (``where=``): a comparison of a meta key, or
    predicates combined with ``&``, ``|`` and ``~``."""

    __slots__ = ("_predicate",)

    def __init__(self, tree: tuple[Any, ...]) -> None:
        self._predicate = tree

    def __and__(self, other: Predicate) -> Predicate:
        return Predicate(("and", [self._predicate, _predicate(other)._predicate]))

    def __or__(self, other: Predicate) -> Predicate:
        return Predicate(("or", [self._predicate, _predicate(other)._predicate]))

    def __invert__(self) -> Predicate:
        return Predicate(("not", self._predicate))

    def __bool__(self) -> NoReturn:
        raise InvalidInputError(
            "a gulp.col predicate has no truth value: combine with &, | and ~, "
            "not and, or, not (and parenthesise comparisons: (a == 1) & (b > 2))")

    def __repr__(self) -> str:
        return f"Predicate({_show(self._predicate)})"


class WeightColumn:
    """Per-item sampling weights read from a meta key (``weights=``)."""

    __slots__ = ("_weights",)

    def __init__(self, tree: tuple[Any, ...]) -> None:
        self._weights = tree

    def __repr__(self) -> str:
        return f"WeightColumn({self._weights!r})"


class Column:
    """A meta key (``col("label")``): compare it to make a
    :class:`Predicate`, or give it as ``weights=`` (its value, a number)."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"a meta key is a non-empty string, not {key!r}")
        self.key = key

    def _cmp(self, op: str, value: Any) -> Predicate:
        return Predicate(("cmp", self.key, op, _constant(value)))

    # Comparisons make predicates, as in numpy and polars.
    def __eq__(self, value: Any) -> Predicate:  # type: ignore[override]
        return self._cmp("==", value)

    def __ne__(self, value: Any) -> Predicate:  # type: ignore[override]
        return self._cmp("!=", value)

    def __lt__(self, value: Any) -> Predicate:
        return self._cmp("<", value)

    def __le__(self, value: Any) -> Predicate:
        return self._cmp("<=", value)

    def __gt__(self, value: Any) -> Predicate:
        return self._cmp(">", value)

    def __ge__(self, value: Any) -> Predicate:
        return self._cmp(">=", value)

    __hash__ = None  # type: ignore[assignment]

    def is_in(self, values: Iterable[Any]) -> Predicate:
        """The value is one of ``values``."""
        if isinstance(values, (str, bytes)):
            raise InvalidInputError(f"is_in takes a collection of values, not {values!r}")
        return Predicate(("in", self.key, [_constant(v) for v in values]))

    def is_null(self) -> Predicate:
        """The key is missing or ``None``."""
        return Predicate(("not", ("present", self.key)))

    def is_not_null(self) -> Predicate:
        """The key is present and not ``None``."""
        return Predicate(("present", self.key))

    def fill_null(self, default: float) -> WeightColumn:
        """As weights: the value, or ``default`` where it is missing or
        ``None`` (without it, such an item is an error)."""
        return WeightColumn(("key", self.key, float(default)))

    def replace(self, weights: Mapping[Any, float], *,
                default: Optional[float] = None) -> WeightColumn:
        """As weights: the weight given for the item's value (``{"rare":
        5.0}``), ``default`` for a value not given (without it, an error)."""
        if not isinstance(weights, Mapping):
            raise InvalidInputError(f"replace takes a dict value -> weight, not {weights!r}")
        return WeightColumn(("replace", self.key,
                             [(_constant(k), float(w)) for k, w in weights.items()],
                             None if default is None else float(default)))

    @property
    def _weights(self) -> tuple[Any, ...]:
        return ("key", self.key, None)

    def __bool__(self) -> NoReturn:
        raise InvalidInputError(
            f"col({self.key!r}) has no truth value: compare it (col({self.key!r}) == ...)")

    def __repr__(self) -> str:
        return f"col({self.key!r})"


def col(key: str) -> Column:
    """The meta key ``key`` of each item, for ``where=`` and ``weights=``."""
    return Column(key)


def _predicate(value: Any) -> Predicate:
    if isinstance(value, Predicate):
        return value
    if isinstance(value, Column):
        raise InvalidInputError(
            f"{value!r} is a key, not a predicate: compare it ({value!r} == ...)")
    raise InvalidInputError(f"combine predicates with predicates, not with {value!r}")


def _show(tree: tuple[Any, ...]) -> str:
    kind = tree[0]
    if kind == "cmp":
        return f"col({tree[1]!r}) {tree[2]} {tree[3]!r}"
    if kind == "in":
        return f"col({tree[1]!r}).is_in({tree[2]!r})"
    if kind == "present":
        return f"col({tree[1]!r}).is_not_null()"
    if kind == "not":
        return f"~({_show(tree[1])})"
    return f" {'&' if kind == 'and' else '|'} ".join(f"({_show(t)})" for t in tree[1])
