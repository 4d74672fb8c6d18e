"""Kernels compiled by numba on their first call, so that importing a package does not import numba.

``import numba`` costs about half a CPU-second; ``import sdckit.risk`` and ``import sdckit.anonymize``
should not pay it before a kernel runs. :func:`njit` takes numba's options and returns a
:class:`LazyKernel`: on its first call it imports numba, compiles the function with those options
(``cache=True`` keeps the machine code on disk as before) and puts numba's dispatcher in the
module's globals under the kernel's name, where the other kernels of the module find it when they
are compiled (a kernel that calls another compiles that one first). Later calls go straight to the
dispatcher.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def _global_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


class LazyKernel:
    """A function compiled by ``numba.njit(**options)`` on its first call (see the module notes)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any], names: Callable[[], dict[str, Any]] | None) -> None:
        self._fn = fn
        self._options = options
        self._names = names
        self._dispatcher: Any = None
        functools.update_wrapper(self, fn)

    @property
    def py_func(self) -> Callable[..., Any]:
        """The Python function (as numba's ``Dispatcher.py_func``)."""
        return self._fn

    def compiled(self) -> Any:
        """numba's dispatcher of the function, created (and put in the module's globals) on first use."""
        if self._dispatcher is None:
            import numba  # lazy: start-up time (the point of this module)

            g = self._fn.__globals__
            if self._names is not None:
                g.update(self._names())
            self._dispatcher = numba.njit(**self._options)(self._fn)
            g[self._fn.__name__] = self._dispatcher
            for name in set(_global_names(self._fn.__code__)):
                other = g.get(name)
                if isinstance(other, LazyKernel):  # a kernel this one calls, perhaps of another module
                    g[name] = other.compiled()
        return self._dispatcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.compiled()(*args, **kwargs)


def njit(*, names: Callable[[], dict[str, Any]] | None = None, **options: Any) -> Callable[[F], F]:
    """``numba.njit(**options)``, compiled on the first call; ``names()`` gives globals the kernel
    needs from numba itself (e.g. ``numba.typed.List``), set in the module before compiling."""

    def wrap(fn: F) -> F:
        return LazyKernel(fn, options, names)  # type: ignore[return-value]  # called like fn

    return wrap
