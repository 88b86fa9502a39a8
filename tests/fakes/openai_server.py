"""A local fake of the OpenAI Chat Completions HTTP API (``POST /v1/chat/completions``).

It speaks the wire format closely enough for litellm (through the openai SDK) to use it
unmodified: ``litellm.acompletion(model="openai/fake", api_base=f"{fake.url}/v1", ...)``.

* Non-streaming answers are ``chat.completion`` objects; ``"stream": true`` answers are
  server-sent ``chat.completion.chunk`` events ending with ``data: [DONE]``.
* Replies are scripted with :meth:`FakeOpenAI.queue_reply` / :meth:`FakeOpenAI.queue_tool_call`
  (first in, first out); with nothing queued the reply is ``"echo: <last user message>"``.
  Given ``model=``, a reply or failure is only for requests naming that model (as litellm
  sends it: ``openai/kai`` arrives as ``kai``), so callers that run at once can be scripted
  apart; requests for a model with nothing of its own queued take from the shared queue.
* :meth:`FakeOpenAI.fail_next` answers the next request with an OpenAI-style error, and
  :meth:`FakeOpenAI.hold_next` keeps the next request waiting until :meth:`FakeOpenAI.release`
  or :meth:`FakeOpenAI.stop`.
* Every request body is kept in :attr:`FakeOpenAI.requests`; a held request whose client
  disconnects is counted in :attr:`FakeOpenAI.abandoned_count`.

The same controls are served over HTTP under ``/_control/`` so that a test can drive a fake
running in another process: ``python -m tests.fakes.openai_server --port P`` prints
``READY <url>`` once it is listening and serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

JSON = dict[str, Any]

HOST = "127.0.0.1"
SYSTEM_FINGERPRINT = "fp_fake0openai"
STREAM_PIECE_CHARS = 4
STARTUP_TIMEOUT_SECONDS = 10.0
SHUTDOWN_TIMEOUT_SECONDS = 10.0

_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


# --------------------------------------------------------------------------- scripted data


@dataclass(frozen=True)
class ToolCall:
    """One function call the fake model asks for."""

    name: str
    arguments: JSON
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:24]}")

    def to_message_json(self) -> JSON:
        """The ``message.tool_calls[i]`` entry of a non-streaming answer."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments)},
        }


@dataclass(frozen=True)
class Reply:
    """A scripted assistant answer: text, or tool calls (then ``text`` is None)."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class Failure:
    """A scripted HTTP error answer."""

    status: int = 429
    retry_after: float | None = None
    message: str | None = None


# --------------------------------------------------------------------------- state


class _Hold:
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
        self._held: list[_Hold] = []
        self._abandoned = 0  # held requests whose client went away
        self._stopping = threading.Event()
        self.latency_s = 0.0  # every answer waits this long first (a slow model)

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

    def abandon(self, hold: _Hold) -> None:
        with self._lock:
            if hold in self._held:
                self._held.remove(hold)
            self._abandoned += 1

    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self._failures.clear()
            self._requests.clear()
            self._usage.clear()
        self.release()

    # ---- serving (server side)

    def record(self, body: JSON) -> _Hold | None:
        """Log a request (in the server loop); return what to wait on if it must be held."""
        with self._lock:
            self._requests.append(body)
            model = str(body.get("model") or "")
            which = model if self._holds_pending.get(model) else None
            if not self._holds_pending.get(which) or self.is_stopping:
                return None
            self._holds_pending[which] -= 1
            hold = _Hold()
            self._held.append(hold)
            return hold

    def next_failure(self, body: JSON) -> Failure | None:
        with self._lock:
            queue = _own_or_shared(self._failures, body)
            return queue.popleft() if queue else None

    def next_reply(self, body: JSON) -> Reply:
        with self._lock:
            queue = _own_or_shared(self._replies, body)
            reply = queue.popleft() if queue else Reply(text=f"echo: {_last_user_text(body)}")
            self._usage.append(usage_json(body, reply))
        return reply


def _own_or_shared(queues: dict[str | None, deque[Any]], body: JSON) -> deque[Any] | None:
    own = queues.get(str(body.get("model") or ""))
    return own if own else queues.get(None)


def _last_user_text(body: JSON) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "".join(parts)
    return ""


# --------------------------------------------------------------------------- wire format


def _new_completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:29]}"


def _count_tokens(text: str) -> int:
    return max(1, len(text.split())) if text else 0


def _prompt_tokens(body: JSON) -> int:
    messages = body.get("messages") or []
    return sum(
        _count_tokens(_content_text(m.get("content"))) + 3 for m in messages if isinstance(m, dict)
    )


def _completion_tokens(reply: Reply) -> int:
    if reply.tool_calls:
        return sum(_count_tokens(json.dumps(c.arguments)) + 3 for c in reply.tool_calls)
    return _count_tokens(reply.text or "")


def usage_json(body: JSON, reply: Reply) -> JSON:
    prompt, completion = _prompt_tokens(body), _completion_tokens(reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def completion_json(body: JSON, reply: Reply) -> JSON:
    """A non-streaming ``chat.completion`` object."""
    message: JSON = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
    if reply.tool_calls:
        message["tool_calls"] = [c.to_message_json() for c in reply.tool_calls]
    return {
        "id": _new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": usage_json(body, reply),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def _split(text: str, size: int = STREAM_PIECE_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _text_deltas(text: str) -> Iterator[JSON]:
    yield {"role": "assistant", "content": "", "refusal": None}
    for piece in _split(text):
        yield {"content": piece}


def _tool_call_deltas(calls: tuple[ToolCall, ...]) -> Iterator[JSON]:
    for index, call in enumerate(calls):
        head: JSON = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        first: JSON = {"tool_calls": [head]}
        if index == 0:
            first = {"role": "assistant", "content": None, "refusal": None, **first}
        yield first
        for piece in _split(json.dumps(call.arguments)):
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def chunk_jsons(body: JSON, reply: Reply) -> Iterator[JSON]:
    """The ``chat.completion.chunk`` objects of a streamed answer, in order."""
    base: JSON = {
        "id": _new_completion_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
    deltas = (
        _tool_call_deltas(reply.tool_calls) if reply.tool_calls else _text_deltas(reply.text or "")
    )
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    extra: JSON = {"usage": None} if include_usage else {}
    for delta in deltas:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}
        yield {**base, "choices": [choice], **extra}
    last = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": reply.finish_reason}
    yield {**base, "choices": [last], **extra}
    if include_usage:
        yield {**base, "choices": [], "usage": usage_json(body, reply)}


async def _sse_events(body: JSON, reply: Reply) -> AsyncIterator[str]:
    for chunk in chunk_jsons(body, reply):
        yield f"data: {json.dumps(chunk)}\n\n"
        await asyncio.sleep(0)  # let each delta go out on its own
    yield "data: [DONE]\n\n"


def error_response(failure: Failure) -> JSONResponse:
    """An OpenAI-style error answer, with ``Retry-After`` when asked for."""
    kind, code = _ERROR_KINDS.get(failure.status, ("api_error", None))
    message = failure.message or f"Fake OpenAI injected error (HTTP {failure.status})."
    headers = {"x-request-id": f"req_{uuid.uuid4().hex}"}
    if failure.retry_after is not None:
        headers["retry-after"] = f"{failure.retry_after:g}"
    content = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(content, status_code=failure.status, headers=headers)


# --------------------------------------------------------------------------- HTTP app


async def _json_body(request: Request) -> JSON | None:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


async def _held_until_released(hold: _Hold, request: Request) -> bool:
    """Wait for the release; False if the client disconnected first."""
    while True:
        try:
            await asyncio.wait_for(hold.wait(), 0.05)
            return True
        except TimeoutError:
            if await request.is_disconnected():
                return False


def _make_chat_completions(state: FakeState) -> Callable[[Request], Awaitable[Response]]:
    async def chat_completions(request: Request) -> Response:
        body = await _json_body(request)
        if body is None:
            return error_response(Failure(400, None, "The request body is not a JSON object."))
        hold = state.record(body)
        if state.latency_s:
            await asyncio.sleep(state.latency_s)
        if hold is not None:
            if not await _held_until_released(hold, request):
                state.abandon(hold)  # the client gave up on the request while it was held
                return Response(status_code=499)
            if state.is_stopping:
                return error_response(Failure(503, None, "The fake OpenAI server is stopping."))
        failure = state.next_failure(body)
        if failure is not None:
            return error_response(failure)
        reply = state.next_reply(body)
        if body.get("stream"):
            return StreamingResponse(_sse_events(body, reply), media_type="text/event-stream")
        return JSONResponse(completion_json(body, reply))

    return chat_completions


def _make_control_routes(state: FakeState) -> list[Route]:
    async def hold_next(request: Request) -> Response:
        body = await _json_body(request) or {}
        state.hold_next(body.get("model"))
        return JSONResponse({"ok": True})

    async def release(request: Request) -> Response:
        state.release()
        return JSONResponse({"ok": True})

    async def queue_reply(request: Request) -> Response:
        body = await _json_body(request) or {}
        state.queue_reply(str(body.get("text", "")), body.get("model"))
        return JSONResponse({"ok": True})

    async def queue_tool_call(request: Request) -> Response:
        body = await _json_body(request) or {}
        state.queue_tool_call(
            str(body.get("name", "")), dict(body.get("arguments") or {}), None, body.get("model")
        )
        return JSONResponse({"ok": True})

    async def fail_next(request: Request) -> Response:
        body = await _json_body(request) or {}
        state.fail_next(
            int(body.get("status", 429)),
            body.get("retry_after", 2),
            body.get("message"),
            body.get("model"),
        )
        return JSONResponse({"ok": True})

    async def reset(request: Request) -> Response:
        state.reset()
        return JSONResponse({"ok": True})

    async def requests(request: Request) -> Response:
        return JSONResponse(state.requests)

    async def held(request: Request) -> Response:
        return JSONResponse({"held": state.held_count})

    return [
        Route("/_control/hold_next", hold_next, methods=["POST"]),
        Route("/_control/release", release, methods=["POST"]),
        Route("/_control/queue_reply", queue_reply, methods=["POST"]),
        Route("/_control/queue_tool_call", queue_tool_call, methods=["POST"]),
        Route("/_control/fail_next", fail_next, methods=["POST"]),
        Route("/_control/reset", reset, methods=["POST"]),
        Route("/_control/requests", requests, methods=["GET"]),
        Route("/_control/held", held, methods=["GET"]),
    ]


def build_app(state: FakeState) -> Starlette:
    """The Starlette app: chat completions (with and without ``/v1``) plus the controls."""
    chat = _make_chat_completions(state)
    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
        *_make_control_routes(state),
    ]
    return Starlette(routes=routes)


# --------------------------------------------------------------------------- server


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class FakeOpenAI:
    """The fake server: uvicorn in a background thread, bound to ``127.0.0.1``."""

    def __init__(self, port: int = 0) -> None:
        self.state = FakeState()
        self._port = port
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("FakeOpenAI is not started")
        return int(self._socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _make_server(self) -> uvicorn.Server:
        self._socket = _bind(self._port)
        config = uvicorn.Config(
            build_app(self.state),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        return self._server

    def start(self) -> FakeOpenAI:
        """Start serving in a daemon thread; return once the port accepts connections."""
        if self._thread is not None:
            raise RuntimeError("FakeOpenAI is already started")
        server = self._make_server()
        sockets = [self._socket] if self._socket is not None else []
        self._thread = threading.Thread(
            target=server.run, args=(sockets,), name=f"FakeOpenAI-{self.port}", daemon=True
        )
        self._thread.start()
        self._wait_started(server)
        return self

    def _wait_started(self, server: uvicorn.Server) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while not server.started:
            if not self.running or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("FakeOpenAI did not start")
            time.sleep(0.01)

    def serve_forever(self) -> None:
        """Serve until SIGINT/SIGTERM, printing ``READY <url>`` once listening."""
        stop_requested = threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop_requested.set()

        previous = {
            sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            self.start()
            print(f"READY {self.url}", flush=True)
            while not stop_requested.wait(0.5):
                pass
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self) -> None:
        """Stop serving: held requests get a 503, the thread is joined, the port closed."""
        self.state.stopping()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(SHUTDOWN_TIMEOUT_SECONDS)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(SHUTDOWN_TIMEOUT_SECONDS)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- scripting and inspection (delegated to the state)

    def queue_reply(self, text: str, model: str | None = None) -> None:
        """Answer a coming request (of ``model``) with ``text`` (first in, first out)."""
        self.state.queue_reply(text, model)

    def queue_tool_call(
        self, name: str, arguments: JSON, call_id: str | None = None, model: str | None = None
    ) -> None:
        """Answer a coming request (of ``model``) with a call of tool ``name``."""
        self.state.queue_tool_call(name, arguments, call_id, model)

    def fail_next(
        self,
        status: int = 429,
        retry_after: float | None = 2,
        message: str | None = None,
        model: str | None = None,
    ) -> None:
        """Answer the next request (of ``model``) with an OpenAI-style error."""
        self.state.fail_next(status, retry_after, message, model)

    def hold_next(self, model: str | None = None) -> None:
        """Keep the next request (of ``model``) waiting, unanswered, until :meth:`release`
        or :meth:`stop`."""
        self.state.hold_next(model)

    def release(self) -> None:
        """Let held requests be answered (and cancel holds no request has taken yet)."""
        self.state.release()

    def reset(self) -> None:
        """Forget queued replies, failures and logged requests; release held requests."""
        self.state.reset()

    @property
    def requests(self) -> list[JSON]:
        """A copy of the JSON bodies received so far, in order."""
        return self.state.requests

    @property
    def usage(self) -> list[JSON]:
        """What each answer reported it took (OpenAI's `usage` object), in order."""
        return self.state.usage

    @property
    def held_count(self) -> int:
        """How many requests are being held right now."""
        return self.state.held_count

    @property
    def abandoned_count(self) -> int:
        """How many held requests their client abandoned (closed the connection)."""
        return self.state.abandoned_count

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[JSON]:
        """Block until at least ``count`` requests have arrived; return them."""
        deadline = time.monotonic() + timeout
        while len(self.state.requests) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} request(s), got {len(self.requests)}")
            time.sleep(0.01)
        return self.requests


# --------------------------------------------------------------------------- standalone


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI Chat Completions server.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    args = parser.parse_args(argv)
    FakeOpenAI(port=args.port).serve_forever()


if __name__ == "__main__":
    main()
