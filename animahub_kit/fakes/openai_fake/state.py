"""What the fake holds and records: scripted replies and failures (per model or shared), the
holds, the request log and the usage of each answer; safe to use from any thread."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

from animahub_kit.fakes.openai_fake.ratelimit import StandingLimit
from animahub_kit.fakes.openai_fake.script import JSON, Failure, Reply, ToolCall
from animahub_kit.fakes.openai_fake.wire import last_user_text, usage_json


class Hold:
    """A held request: an asyncio event of the server loop, settable from any thread."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def set(self) -> None:
        # If the server loop is already closed, nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._event.set)

    async def wait(self) -> None:
        await self._event.wait()


class FakeState:
    """Scripted replies, failures, holds and the request log; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: dict[str | None, deque[Reply]] = {}
        self._failures: dict[str | None, deque[Failure]] = {}
        self._requests: list[JSON] = []
        self._usage: list[JSON] = []  # the usage of each answer, as the server reports it
        self._holds_pending: dict[str | None, int] = {}
        self._held: list[Hold] = []
        self._abandoned = 0  # held requests whose client went away
        self._stopping = threading.Event()
        self.latency_s = 0.0  # every answer waits this long first (a slow model)
        # Refusals that last until reset (animahub_kit/fakes/openai_fake/outage.py): per model, or
        # for every request (None); and how many times the list of models was asked for.
        self._refusals: dict[str | None, Failure] = {}
        self._model_lists = 0
        self.limit = StandingLimit()  # a standing rate limit (ratelimit.py); none by default

    # ---- scripting (test side)

    def queue_reply(self, text: str, model: str | None = None) -> None:
        with self._lock:
            self._replies.setdefault(model, deque()).append(Reply(text=text))

    def queue_tool_call(
        self, name: str, arguments: JSON, call_id: str | None = None, model: str | None = None
    ) -> None:
        call = ToolCall(name, arguments) if call_id is None else ToolCall(name, arguments, call_id)
        with self._lock:
            self._replies.setdefault(model, deque()).append(Reply(tool_calls=(call,)))

    def fail_next(
        self,
        status: int = 429,
        retry_after: float | None = 2,
        message: str | None = None,
        model: str | None = None,
    ) -> None:
        with self._lock:
            self._failures.setdefault(model, deque()).append(Failure(status, retry_after, message))

    def hold_next(self, model: str | None = None) -> None:
        with self._lock:
            self._holds_pending[model] = self._holds_pending.get(model, 0) + 1

    def release(self) -> None:
        """Let every held request go on, and cancel holds not yet taken by a request."""
        with self._lock:
            self._holds_pending = {}
            held, self._held = self._held, []
        for hold in held:
            hold.set()

    def stopping(self) -> None:
        self._stopping.set()
        self.release()

    @property
    def is_stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def requests(self) -> list[JSON]:
        with self._lock:
            return list(self._requests)

    @property
    def usage(self) -> list[JSON]:
        """What each answer reported it took (OpenAI's `usage` object), in order."""
        with self._lock:
            return list(self._usage)

    @property
    def held_count(self) -> int:
        with self._lock:
            return len(self._held)

    @property
    def abandoned_count(self) -> int:
        with self._lock:
            return self._abandoned

    def abandon(self, hold: Hold) -> None:
        with self._lock:
            if hold in self._held:
                self._held.remove(hold)
            self._abandoned += 1

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self._failures.clear()
            self._refusals.clear()
            self._model_lists = 0
            self._requests.clear()
            self._usage.clear()
        self.release()

    # ---- serving (server side)

    def record(self, body: JSON) -> Hold | None:
        """Log a request (in the server loop); return what to wait on if it must be held."""
        with self._lock:
            self._requests.append(body)
            model = str(body.get("model") or "")
            which = model if self._holds_pending.get(model) else None
            if not self._holds_pending.get(which) or self.is_stopping:
                return None
            self._holds_pending[which] -= 1
            hold = Hold()
            self._held.append(hold)
            return hold

    def next_failure(self, body: JSON) -> Failure | None:
        with self._lock:
            queue = _own_or_shared(self._failures, body)
            return queue.popleft() if queue else None

    def next_reply(self, body: JSON) -> Reply:
        with self._lock:
            queue = _own_or_shared(self._replies, body)
            reply = queue.popleft() if queue else Reply(text=f"echo: {last_user_text(body)}")
            self._usage.append(usage_json(body, reply))
        return reply

    # ---- refusals and outages (animahub_kit/fakes/openai_fake/outage.py)

    def refuse(self, failure: Failure, model: str | None = None) -> None:
        """Answer every request (of ``model``) with ``failure`` until :meth:`reset`."""
        with self._lock:
            self._refusals[model] = failure

    def refusal(self, model: str) -> Failure | None:
        """The refusal a request for ``model`` gets, if any: its own, else everyone's."""
        with self._lock:
            return self._refusals.get(model) or self._refusals.get(None)

    def count_model_list(self) -> None:
        with self._lock:
            self._model_lists += 1

    @property
    def model_lists(self) -> int:
        """How many times the list of models (``GET /v1/models``) was asked for."""
        with self._lock:
            return self._model_lists

    def resume(self) -> None:
        """Serve again after a stop (:meth:`FakeOpenAI.come_back`)."""
        self._stopping.clear()


def _own_or_shared(queues: dict[str | None, deque[Any]], body: JSON) -> deque[Any] | None:
    own = queues.get(str(body.get("model") or ""))
    return own if own else queues.get(None)
