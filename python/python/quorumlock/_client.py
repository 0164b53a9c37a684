"""The public clients and locks: ``Client``/``Lock`` (blocking, GIL released while waiting)
and ``AsyncClient``/``AsyncLock`` (asyncio), over one native object each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from . import _quorumlock
from ._quorumlock import Inspection, Metrics, NodeInfo, NodeResult
from ._scoped import AsyncLostFlag, LockScope, LostFlag, synchronized
from .compat._conn import node_urls

__all__ = ["AsyncClient", "AsyncLock", "Client", "Lock"]

F = TypeVar("F", bound=Callable[..., Any])
OnLost = Callable[[BaseException], object]


class _LockBase:
    _native: _quorumlock.Lock

    @property
    def value(self) -> str:
        """The value stored in the keys: 40 random hex characters, or the ``value=`` given."""
        return self._native.value

    @property
    def resources(self) -> list[bytes]:
        """The resources, sorted and deduplicated."""
        return self._native.resources

    @property
    def token(self) -> int | None:
        """The fencing token (of the first resource) of a lock acquired with ``fenced=True``:
        strictly greater than every token returned before for that resource. Pass it to the
        protected resource, which refuses tokens lower than the highest it has seen (in Redis:
        ``FENCE_CHECK_SCRIPT``). ``None`` when not fenced."""
        return self._native.token

    @property
    def tokens(self) -> list[int] | None:
        """The fencing tokens, one per resource in ``resources`` order; ``None`` when not
        fenced."""
        return self._native.tokens

    @property
    def ttl(self) -> float:
        """The TTL in seconds."""
        return self._native.ttl

    @property
    def validity(self) -> float:
        """Seconds of validity the acquisition left."""
        return self._native.validity

    @property
    def attempts(self) -> int:
        """Attempts the acquisition took."""
        return self._native.attempts

    @property
    def extensions(self) -> int:
        """Successful extensions so far."""
        return self._native.extensions

    @property
    def nodes(self) -> list[NodeResult]:
        """The per-node report of the acquisition."""
        return self._native.nodes

    @property
    def auto_extending(self) -> bool:
        """True while the automatic extension runs."""
        return self._native.auto_extending

    def remaining(self) -> float:
        """Seconds of validity left now; 0.0 once expired, lost or released. Act on the
        protected resource only while this is positive."""
        return self._native.remaining()

    def is_held(self) -> bool:
        """True while held and within validity."""
        return self._native.is_held()

    def set_auto_extend(self, on: bool) -> None:
        """Starts or stops the automatic extension (every ``ttl / 3``)."""
        self._native.set_auto_extend(on)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} value={self.value} remaining={self.remaining():.3f}>"


def _prepare(options: dict[str, Any]) -> OnLost | None:
    on_lost = options.pop("on_lost", None)
    if on_lost is not None and not callable(on_lost):
        # Checked here: the engine calls it only when the lock is lost, on an engine thread.
        raise TypeError(f"on_lost must be a callable or None, not {type(on_lost).__name__}")
    return on_lost


class Lock(_LockBase):
    """A held lock (blocking API). Use as a context manager to release on exit."""

    def __init__(self, native: _quorumlock.Lock) -> None:
        self._native = native
        self.lost = LostFlag(native)

    @classmethod
    def _acquire(cls, client: _quorumlock.Client, resources: Any, options: dict[str, Any]) -> Lock:
        on_lost = _prepare(options)
        native = client.acquire(resources, **options)
        if on_lost is not None:
            native.on_lost(on_lost)
        return cls(native)

    def extend(self, ttl: float | None = None) -> None:
        """Extends to ``ttl`` seconds (default: the lock's TTL) on a quorum of nodes."""
        self._native.extend(ttl)

    def release(self) -> list[NodeResult]:
        """Releases on every node and returns the per-node report; idempotent."""
        return self._native.release()

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class AsyncLock(_LockBase):
    """A held lock (asyncio API). Use with ``async with`` to release on exit."""

    def __init__(self, native: _quorumlock.Lock) -> None:
        self._native = native
        self.lost = AsyncLostFlag(native)

    @classmethod
    async def _acquire(
        cls, client: _quorumlock.Client, resources: Any, options: dict[str, Any]
    ) -> AsyncLock:
        on_lost = _prepare(options)
        native = await client.acquire_async(resources, **options)
        if on_lost is not None:
            native.on_lost(on_lost)
        return cls(native)

    async def extend(self, ttl: float | None = None) -> None:
        """Extends to ``ttl`` seconds (default: the lock's TTL) on a quorum of nodes."""
        await self._native.extend_async(ttl)

    async def release(self) -> list[NodeResult]:
        """Releases on every node and returns the per-node report; idempotent."""
        return await self._native.release_async()

    async def __aenter__(self) -> AsyncLock:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()


class _ClientBase:
    _native: _quorumlock.Client

    def __init__(self, nodes: Any, **options: Any) -> None:
        """Connects to ``nodes`` (URLs, redis-py keyword dicts, ``(host, port)`` tuples or
        redis-py clients). Options: client settings (``drift_factor``, ``max_ttl``,
        ``connect_timeout``, ``key_prefix``, ``key_format`` = ``"braced"`` | ``"bare"``,
        ``require_quorum``, ``quarantine`` = ``"on"`` | ``"strict"`` | ``"off"``,
        ``quarantine_margin``, ``eviction_check`` = ``"refuse"`` | ``"warn"`` | ``"off"``,
        ``notify``, ...) and default lock options (``ttl``, ``retry_count``, ``retry_delay``,
        ``wait``, ``fenced``, ...): every option, its default and its range are listed in
        docs/options.md. Durations are float seconds or ``timedelta``s.
        A ``redis+cluster://host:port,host:port`` URL (or a redis-py ``RedisCluster``) is one
        member whose keys route by slot. Engine warnings (``QL_W_NOT_DURABLE``, ...) go to the
        ``quorumlock`` logger once per kind and node, with ``code`` and ``node`` on the
        record."""
        self._native = _quorumlock.Client(node_urls(nodes), **options)

    def lock(self, resources: Any, **options: Any) -> LockScope:
        """A scope for ``with`` and ``async with``: acquires on entry with auto-extension on,
        releases on exit. ``on_lost=callback`` is called (on an engine thread) if lost."""
        return LockScope(self._native, resources, options)

    def synchronized(self, resources: Any, **options: Any) -> Callable[[F], F]:
        """Decorator: each call of the function or coroutine function holds the lock."""
        return synchronized(self._native, resources, **options)

    def release_value(self, resources: Any, value: str) -> list[NodeResult]:
        """Releases ``resources`` where they hold ``value`` (from ``Lock.value``)."""
        return self._native.release_value(resources, value)

    def key(self, resource: str | bytes) -> bytes:
        """The Redis key of a resource."""
        return self._native.key(resource)

    def metrics(self) -> Metrics:
        """A frozen snapshot of this client's counters and latency histograms (no waiting,
        also on ``AsyncClient``): ``acquire``, ``extend`` and ``release`` outcomes,
        ``acquire_attempts``, ``lost``, ``wakeups`` and per node the replies by kind.
        ``to_prometheus()`` renders it as Prometheus text."""
        return self._native.metrics()

    @property
    def node_count(self) -> int:
        """Number of configured nodes."""
        return self._native.node_count

    @property
    def quorum(self) -> int:
        """The quorum ``N // 2 + 1``."""
        return self._native.quorum

    @property
    def addresses(self) -> list[str]:
        """Node addresses (``host:port/db``)."""
        return self._native.addresses


class Client(_ClientBase):
    """A Redlock client (blocking API). Waits release the GIL; Ctrl-C cancels cleanly."""

    def acquire(self, resources: Any, **options: Any) -> Lock:
        """Acquires ``resources`` (a name or a list of names). ``value=`` stores a value of
        your own (16+ printable ASCII characters) instead of a random one. Raises
        ``LockBusy``, ``QuorumNotReached``, ``ValidityTooShort`` or ``InvalidArgument``."""
        return Lock._acquire(self._native, resources, options)

    def extend_value(self, resources: Any, value: str, ttl: float) -> float:
        """Extends ``resources`` to ``ttl`` seconds wherever they hold ``value`` (a
        ``Lock.value`` from any process, or a peer library's value) and returns the validity
        left in seconds; keys are never re-created. Raises ``LockLost`` when they are gone or
        held by another value. Prefer ``Lock.extend`` when you have the lock."""
        return self._native.extend_value(resources, value, ttl)

    def inspect(self, resource: str | bytes) -> Inspection:
        """Every node's value and TTL for ``resource`` (``nodes``), and the value held on a
        quorum (``holder``, else ``None``)."""
        return self._native.inspect(resource)

    def ping(self) -> list[NodeInfo]:
        """Pings every node and reads its settings (latency, version, uptime, persistence,
        eviction policy, warnings), one ``NodeInfo`` per node. Raises ``ConnectionFailed``,
        ``AuthFailed``, ... when fewer than a quorum answer."""
        return self._native.ping()


class AsyncClient(_ClientBase):
    """A Redlock client (asyncio API); cancelling a task cancels its acquisition cleanly."""

    async def acquire(self, resources: Any, **options: Any) -> AsyncLock:
        """Acquires ``resources`` (a name or a list of names)."""
        return await AsyncLock._acquire(self._native, resources, options)

    async def extend_value(self, resources: Any, value: str, ttl: float) -> float:
        """As ``Client.extend_value``, awaitable."""
        return await self._native.extend_value_async(resources, value, ttl)

    async def inspect(self, resource: str | bytes) -> Inspection:
        """As ``Client.inspect``, awaitable."""
        return await self._native.inspect_async(resource)

    async def holder(self, resource: str | bytes) -> str | None:
        """The value held on a quorum of nodes, or ``None``."""
        return await self._native.holder_async(resource)

    async def ping(self) -> list[NodeInfo]:
        """As ``Client.ping``, awaitable."""
        return await self._native.ping_async()
