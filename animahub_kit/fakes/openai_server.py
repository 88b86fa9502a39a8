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
* :meth:`FakeOpenAI.refuse` answers every request with an error (401, 404, 429) until
  :meth:`FakeOpenAI.reset`; :meth:`FakeOpenAI.go_down` stops listening and
  :meth:`FakeOpenAI.come_back` listens again on the same port; ``GET /v1/models`` lists
  the models (animahub_kit/fakes/openai_fake/outage.py).

The same controls are served over HTTP under ``/_control/`` so that a test can drive a fake
running in another process: ``python -m animahub_kit.fakes.openai_server --port P`` prints
``READY <url>`` once it is listening and serves until SIGINT/SIGTERM.

This module wires the pieces in animahub_kit/fakes/openai_fake/ (its docstring names them) behind
:class:`FakeOpenAI`, and keeps the names tests import from here.
"""

from __future__ import annotations

import argparse
import signal
import socket
import threading
import time
from types import FrameType, TracebackType

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route

from animahub_kit.fakes.openai_fake.chat import make_chat_completions
from animahub_kit.fakes.openai_fake.control import make_control_routes
from animahub_kit.fakes.openai_fake.errors import error_response
from animahub_kit.fakes.openai_fake.outage import make_outage_routes
from animahub_kit.fakes.openai_fake.ratelimit import limited, make_rate_limit_routes
from animahub_kit.fakes.openai_fake.script import JSON, Failure, Reply, ToolCall
from animahub_kit.fakes.openai_fake.stalls import Stalls, make_stall_routes
from animahub_kit.fakes.openai_fake.state import FakeState
from animahub_kit.fakes.openai_fake.streaming import STREAM_PIECE_CHARS, chunk_jsons
from animahub_kit.fakes.openai_fake.wire import SYSTEM_FINGERPRINT, completion_json, usage_json

# what tests import from here; the names this module had before it was split stay importable
__all__ = [
    "HOST",
    "JSON",
    "SHUTDOWN_TIMEOUT_SECONDS",
    "STARTUP_TIMEOUT_SECONDS",
    "STREAM_PIECE_CHARS",
    "SYSTEM_FINGERPRINT",
    "Failure",
    "FakeOpenAI",
    "FakeState",
    "Reply",
    "ToolCall",
    "build_app",
    "chunk_jsons",
    "completion_json",
    "error_response",
    "main",
    "usage_json",
]

HOST = "127.0.0.1"
STARTUP_TIMEOUT_SECONDS = 10.0
SHUTDOWN_TIMEOUT_SECONDS = 10.0


# --------------------------------------------------------------------------- HTTP app


def build_app(state: FakeState, stalls: Stalls | None = None) -> Starlette:
    """The Starlette app: chat completions (with and without ``/v1``) plus the controls."""
    chat = limited(state.limit, make_chat_completions(state, stalls))
    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
        *make_control_routes(state),
        *make_outage_routes(state),
        *(make_stall_routes(stalls) if stalls is not None else []),
        *make_rate_limit_routes(state.limit, lambda s: setattr(state, "latency_s", s)),
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
        self.stalls = Stalls()  # streams that go quiet (openai_fake/stalls.py)
        self._port = port
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    @property
    def port(self) -> int:
        if self._socket is None and self._port:  # down (go_down), or not started yet
            return self._port
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
            build_app(self.state, self.stalls),
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
        self.stalls.release()
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

    # ---- outages and refusals (animahub_kit/fakes/openai_fake/outage.py)

    def go_down(self) -> None:
        """Stop listening, as a model server that crashed: connections are refused until
        :meth:`come_back`, which listens again on the same port with the same script."""
        port = self.port
        self.stop()
        self._port, self._socket, self._server, self._thread = port, None, None, None

    def come_back(self) -> None:
        """Listen again on the port :meth:`go_down` left."""
        self.state.resume()
        self.start()

    def refuse(
        self,
        status: int = 401,
        model: str | None = None,
        message: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Answer every request (of ``model``) with ``status`` until :meth:`reset`: 401 a
        bad key (echoing part of it), 404 an unknown model, 429 a rate limit."""
        self.state.refuse(Failure(status, retry_after, message), model)

    @property
    def model_lists(self) -> int:
        """How many times ``GET /v1/models`` was asked for."""
        return self.state.model_lists

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

    def rate_limit(
        self,
        per_second: float | None = None,
        burst: float = 1.0,
        max_in_flight: int | None = None,
        retry_after: float | None = 1.0,
    ) -> None:
        """A standing rate limit: 429 past `per_second` (a bucket of `burst`) or past
        `max_in_flight` requests at once, until changed (None: no limit)."""
        self.state.limit.set(per_second, burst, max_in_flight, retry_after)

    @property
    def peak_in_flight(self) -> int:
        """The most requests the fake has been answering at once."""
        return self.state.limit.peak_in_flight

    def hold_next(self, model: str | None = None) -> None:
        """Keep the next request (of ``model``) waiting, unanswered, until :meth:`release`
        or :meth:`stop`."""
        self.state.hold_next(model)

    def release(self) -> None:
        """Let held requests be answered (and cancel holds no request has taken yet)."""
        self.state.release()

    def stall_next(self, after_chars: int = 0, model: str | None = None) -> None:
        """Let the next streamed request (of ``model``) go quiet: with its headers sent and no
        first chunk (``after_chars=0``), or after that many characters of its reply, until
        :meth:`release_stalls` (openai_fake/stalls.py)."""
        self.stalls.stall_next(after_chars, model)

    def release_stalls(self) -> None:
        """Let stalled streams finish (and forget stalls no request has taken yet)."""
        self.stalls.release()

    def reset(self) -> None:
        """Forget queued replies, failures and logged requests; release held requests."""
        self.state.reset()
        self.stalls.release()

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
