"""One completion queue per asyncio event loop: engine threads hand finished operations to
the loop through a pipe that the loop watches (no thread hop, no GIL on engine threads), and
the loop settles the futures on its own thread."""

from __future__ import annotations

import asyncio
import os
import weakref
from typing import Any

from ._quorumlock import Completions

# Loops that take no weak reference (none of asyncio's) keep their queue until exit.
_queues: weakref.WeakKeyDictionary[Any, Completions] = weakref.WeakKeyDictionary()
_strong: dict[Any, Completions] = {}


def _register(loop: asyncio.AbstractEventLoop) -> Completions:
    queue = Completions()
    fd = queue.fileno()
    os.set_blocking(fd, False)
    loop.add_reader(fd, queue.drain)
    try:
        _queues[loop] = queue
    except TypeError:
        _strong[loop] = queue
    return queue


def future() -> tuple[asyncio.Future[Any], Completions]:
    """A new future of the running loop, and the loop's completion queue."""
    loop = asyncio.get_running_loop()
    try:
        queue = _queues.get(loop)
    except TypeError:
        queue = _strong.get(loop)
    if queue is None:
        queue = _register(loop)
    return loop.create_future(), queue
