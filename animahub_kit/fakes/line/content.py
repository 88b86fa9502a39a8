"""``GET /v2/bot/message/{messageId}/content`` (LINE serves it on its api-data host; here the
same server): the content a test added, 404 for any other id, 202 while it is still being
prepared, sent with its length or chunked."""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.line.state import LineState
from animahub_kit.fakes.line.wire import Wire

_CHUNK = 64 * 1024


class Downloads:
    def __init__(self, state: LineState, wire: Wire) -> None:
        self._state = state
        self._wire = wire

    async def content(self, request: web.Request) -> web.StreamResponse:
        state, wire = self._state, self._wire
        index = wire.record(request, None)
        refused = wire.unauthorized(index, request)
        if refused is not None:
            return refused
        content = state.contents.get(request.match_info["message"])
        if content is None:
            return wire.answer(index, {"message": "Not found"}, 404)
        if content.preparing:
            return wire.answer(index, {}, 202)
        wire.answer(index, {})  # records the status
        if content.content_length:
            return web.Response(body=content.data, content_type=content.content_type)
        response = web.StreamResponse(headers={"Content-Type": content.content_type})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(content.data), _CHUNK):
            await response.write(content.data[start : start + _CHUNK])
        await response.write_eof()
        return response
