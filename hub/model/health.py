"""Whether each configured model works, for health, `animahub status` and the dashboard.

Every model call the hub makes goes through one `ModelClient` (turns, tasks, heartbeats and
crons, memory consolidation), which the app wraps in `WatchedModel`: each call reports to
`ModelHealth`, per model name, whether the model answered. A model's state is

- `ok`: its last call (or check) succeeded;
- `unchecked`: configured, but not called since the hub started;
- `degraded`: it failed once with a failure that may pass (unreachable, timing out, a
  server error), or the provider is rate limiting (the model works, slowly: it never goes
  `down` for that), or a request was refused for its content or form (bad request, content
  refused: the model answered; only later calls tell whether it was that request);
- `down`: the failure was confirmed by a second one in a row (a call or a check), or it is
  one no retry mends (key refused, model unknown): nothing will work until it is fixed;
- `offline`: no model is configured at all (offline mode): nothing is called or checked.

With the state come the reason in words (`hub/model/failure.py` `FailureKind`), the error
(redacted, and with key echoes cut: providers quote parts of a refused key), the operator's
fix, `since` (the first failure of the current spell), the last success and the next check.

After a failure the model is checked again with capped, jittered backoff
(`[llm] health_check_min_s` … `health_check_max_s`, never sooner than the provider's
Retry-After) by the cheapest call that answers (hub/model/probe.py), until a call or a
check succeeds. A bad request or a refused content starts no check: the server answered, and
the next call tells. Checks stop when the hub stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from hub.live import LiveFeed
from hub.model.client import LLMError, ModelClient, RoundPiece
from hub.model.failure import KEY_ECHO, FailureKind, without_key_shapes
from hub.model.probe import check
from hub.supervise import Backoff

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


class ModelState(StrEnum):
    OK = "ok"
    UNCHECKED = "unchecked"
    DEGRADED = "degraded"
    DOWN = "down"
    OFFLINE = "offline"


# Worst first: the state the hub shows for all its models together.
_WORST = (ModelState.DOWN, ModelState.DEGRADED, ModelState.UNCHECKED, ModelState.OK)
_DOWN_AT_ONCE = frozenset({FailureKind.KEY_REFUSED, FailureKind.MODEL_UNKNOWN})
_NEVER_DOWN = frozenset(
    {FailureKind.RATE_LIMITED, FailureKind.BAD_REQUEST, FailureKind.CONTENT_REFUSED}
)
# The server answered: a check cannot tell more than the next call will.
_NOT_CHECKED = frozenset({FailureKind.BAD_REQUEST, FailureKind.CONTENT_REFUSED})
_CONFIRMED_AFTER = 2  # transient failures in a row that make a model `down`


def state_after(kind: FailureKind, failures: int) -> ModelState:
    """A model's state after `failures` failures in a row, the last of `kind`."""
    if kind in _DOWN_AT_ONCE:
        return ModelState.DOWN
    if kind in _NEVER_DOWN or failures < _CONFIRMED_AFTER:
        return ModelState.DEGRADED
    return ModelState.DOWN


def without_key_echoes(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with any 8 characters in a row of one of `secrets` (the configured keys), and
    what looks like a key, replaced: health names a key by fingerprint, never by a part."""
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        for start in range(max(len(secret) - 7, 0)):
            piece = secret[start : start + 8]
            at = text.find(piece)
            while at >= 0:
                spans.append((at, at + 8))
                at = text.find(piece, at + 1)
    return without_key_shapes(_cut(text, spans))


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each run of overlapping `spans` replaced by one placeholder."""
    merged: list[list[int]] = []
    for start, stop in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    out, at = [], 0
    for start, stop in merged:
        out += [text[at:start], KEY_ECHO]
        at = stop
    return "".join(out) + text[at:]


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


@dataclass(frozen=True, slots=True)
class ModelStatus:
    state: ModelState = ModelState.UNCHECKED
    kind: FailureKind | None = None  # the last failure's, while it fails
    detail: str = ""  # the last failure's error, redacted
    since: datetime | None = None  # the first failure of this spell
    failures: int = 0  # in a row, calls and checks
    last_success: datetime | None = None
    last_failure: datetime | None = None
    next_check: datetime | None = None

    @property
    def failing(self) -> bool:
        return self.state in (ModelState.DEGRADED, ModelState.DOWN)

    def as_dict(self) -> dict[str, Any]:
        kind = self.kind if self.failing else None
        return {
            "state": self.state.value,
            "reason": kind.value if kind else "",
            "detail": self.detail if kind else "",
            "fix": kind.fix if kind else "",
            "since": _iso(self.since),
            "failures": self.failures,
            "last_success": _iso(self.last_success),
            "last_failure": _iso(self.last_failure),
            "next_check": _iso(self.next_check),
        }


Listener = Callable[[str, ModelStatus], None]


class ModelHealth:
    """Each model's state, from what its calls report; checks a failing model with backoff."""

    def __init__(
        self,
        configured: Callable[[], Iterable[str]],
        client: ModelClient,
        clock: Clock,
        backoff: Backoff,
        secrets: Iterable[str] = (),
    ) -> None:
        self._configured = configured
        self._client = client  # the unwatched client: a check reports itself, once
        self._clock = clock
        self._backoff = backoff
        self._secrets = tuple(s for s in secrets if len(s) >= 8)
        self._models: dict[str, ModelStatus] = {}
        self._kwargs: dict[str, dict[str, Any]] = {}  # the last call's, for its checks
        self._checks: dict[str, asyncio.Task[None]] = {}
        self._due: dict[str, float] = {}  # when each failing model is checked (loop time)
        self._listeners: list[Listener] = []
        self._closed = False

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # What calls report ------------------------------------------------------------------

    def succeeded(self, model: str) -> None:
        current = self._models.get(model, ModelStatus())
        now = self._clock()
        if current.state is ModelState.OK:
            self._models[model] = replace(current, last_success=now)
            return
        if current.failing:
            log.info("model %s works again (after %d failures)", model, current.failures)
        self._set(model, ModelStatus(ModelState.OK, last_success=now))

    def failed(self, model: str, error: LLMError, kwargs: dict[str, Any]) -> None:
        if self._closed:  # the hub is stopping: its calls fail for that, not the model
            return
        current = self._models.get(model, ModelStatus())
        now = self._clock()
        failures = current.failures + 1 if current.failing else 1
        state = state_after(error.kind, failures)
        detail = without_key_echoes(str(error), self._secrets)
        if not current.failing or current.state is not state or current.kind is not error.kind:
            log.warning("model %s is %s (%s): %s", model, state.value, error.kind.value, detail)
        status = replace(
            current,
            state=state,
            kind=error.kind,
            detail=detail,
            since=current.since if current.failing else now,
            failures=failures,
            last_failure=now,
            next_check=None,
        )
        self._kwargs[model] = {k: v for k, v in kwargs.items() if k != "tools"}
        if error.kind not in _NOT_CHECKED:
            delay = max(self._backoff.delay(failures), error.retry_after or 0.0)
            status = replace(status, next_check=now + timedelta(seconds=delay))
            # Scheduled on the loop's clock: the hub's clock may be a test's, standing still.
            self._due[model] = asyncio.get_running_loop().time() + delay
            self._start_check(model)
        self._set(model, status)

    def _set(self, model: str, status: ModelStatus) -> None:
        before = self._models.get(model)
        self._models[model] = status
        if before is None or before.state is not status.state or before.kind is not status.kind:
            for listener in self._listeners:
                listener(model, status)

    # Checks -----------------------------------------------------------------------------

    def _start_check(self, model: str) -> None:
        running = self._checks.get(model)
        if running is None or running.done():
            self._checks[model] = asyncio.create_task(
                self._check_until_ok(model), name=f"model check {model}"
            )

    async def _check_until_ok(self, model: str) -> None:
        loop = asyncio.get_running_loop()
        while True:
            # Until the check is due: a failure meanwhile moves it later.
            if (wait := self._due[model] - loop.time()) > 0:
                await asyncio.sleep(wait)
                continue
            kind = self._models[model].kind
            if not self._models[model].failing or kind is None or kind in _NOT_CHECKED:
                return  # a call succeeded meanwhile, or no check can tell
            try:
                how = await check(self._client, model, self._kwargs[model], kind)
            except LLMError as exc:
                if exc.kind is not FailureKind.BAD_REQUEST:
                    self.failed(model, exc, self._kwargs[model])
                    continue
                # The server answered and took the key: only the check's own tiny request
                # (max_tokens = 1) was refused, as some models refuse it.
                how = f"refused the check's own request: {exc}"
            log.info("model %s answered a check (%s)", model, how)
            self.succeeded(model)
            return

    async def close(self) -> None:
        """Stop checking (the hub stops); calls reported from now on are not counted."""
        self._closed = True
        checks = list(self._checks.values())
        for task in checks:
            task.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        self._checks.clear()

    # What health shows ------------------------------------------------------------------

    def models(self) -> dict[str, ModelStatus]:
        """Every configured model's status, and any other model called since the start."""
        shown = {name: ModelStatus() for name in self._configured() if name}
        shown.update(self._models)
        return dict(sorted(shown.items()))

    def report(self) -> dict[str, Any]:
        """For /api/system/health: the worst state of all the models, and each one's."""
        models = self.models()
        if not models:
            return {"state": ModelState.OFFLINE.value, "models": {}}
        worst = next(s for s in _WORST if any(m.state is s for m in models.values()))
        return {
            "state": worst.value,
            "models": {name: status.as_dict() for name, status in models.items()},
        }

    def problems(self) -> list[str]:
        """`model NAME` for each model degraded or down, for health's `problems`."""
        return [f"model {name}" for name, status in self.models().items() if status.failing]


def configured_models(default: str, own: Iterable[str]) -> list[str]:
    """The models the hub answers with: [llm] model, and each Anima's own (`own`)."""
    return sorted({default, *own} - {""})


def live_notices(live: LiveFeed) -> Listener:
    """A listener that tells the dashboard (`model` notices, public as a platform's are)."""

    def publish(model: str, status: ModelStatus) -> None:
        reason = status.kind.value if status.failing and status.kind else ""
        live.publish("model", None, name=model, state=status.state.value, reason=reason)

    return publish


class WatchedModel:
    """A `ModelClient` that tells `ModelHealth` how each call of the one it wraps went."""

    def __init__(self, inner: ModelClient, health: ModelHealth) -> None:
        self._inner = inner
        self._health = health

    async def warm(self, model: str) -> None:
        await self._inner.warm(model)

    async def stream_round(
        self, messages: list[dict[str, Any]], kwargs: dict[str, Any]
    ) -> AsyncIterator[RoundPiece]:
        model = str(kwargs["model"])
        answered = False
        pieces = self._inner.stream_round(messages, kwargs)
        try:
            with self._watching(model, kwargs):
                async for piece in pieces:
                    if not answered:
                        answered = True  # the model answers: it works, however long it takes
                        self._health.succeeded(model)
                    yield piece
        finally:
            # A caller that stops early ends the inner call now (a model worker drops it),
            # not whenever the generator is collected.
            if (close := getattr(pieces, "aclose", None)) is not None:
                await close()
        if not answered:  # an empty answer is an answer too
            self._health.succeeded(model)

    async def complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        model = str(kwargs["model"])
        with self._watching(model, kwargs):
            content = await self._inner.complete(messages, kwargs)
        self._health.succeeded(model)
        return content

    @contextlib.contextmanager
    def _watching(self, model: str, kwargs: dict[str, Any]) -> Iterator[None]:
        try:
            yield
        except LLMError as exc:
            self._health.failed(model, exc, kwargs)
            raise
        except Exception as exc:
            # Not mapped to a kind (an SDK's own error): the model failed all the same. It is
            # reported and raised on, unchanged.
            failure = LLMError(f"{type(exc).__name__}: {exc}", kind=FailureKind.INTERNAL)
            self._health.failed(model, failure, kwargs)
            raise
