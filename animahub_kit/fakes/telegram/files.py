"""The files the bot fetches: ``getFile`` and the download at ``/file/bot<token>/<path>``.

They serve the files added to the state: an unknown ``file_id`` is 400 "invalid file_id", one
stated over 20 MB 400 "file is too big", as Telegram answers; every download is recorded, so a
test can check that nothing was fetched. A file added with ``content_length=False`` is sent
chunked, its length unannounced.
"""

from __future__ import annotations

from aiohttp import web

from animahub_kit.fakes.telegram.objects import JSON
from animahub_kit.fakes.telegram.state import TelegramState
from animahub_kit.fakes.telegram.wire import ApiError

MAX_FILE_BYTES = 20 * 1024 * 1024  # the largest file getFile hands out


class Files:
    def __init__(self, state: TelegramState) -> None:
        self._state = state

    def get_file(self, params: JSON) -> JSON:
        file_id = str(params.get("file_id") or "")
        file = self._state.files.get(file_id)
        if file is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if file.stated_size is not None and file.stated_size > MAX_FILE_BYTES:
            raise ApiError(400, "Bad Request: file is too big")
        found: JSON = {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "file_path": f"files/{file_id}",
        }
        if file.stated_size is not None:
            found["file_size"] = file.stated_size
        return found

    async def download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self._state.token:
            return web.Response(status=401)
        file_id = request.match_info["path"].removeprefix("files/")
        self._state.downloads.append(file_id)
        file = self._state.files.get(file_id)
        if file is None:
            return web.Response(status=404, text="Not Found")
        if file.content_length:
            return web.Response(body=file.data, content_type="application/octet-stream")
        response = web.StreamResponse()
        response.content_type = "application/octet-stream"
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(file.data), 64 * 1024):
            await response.write(file.data[start : start + 64 * 1024])
        await response.write_eof()
        return response
