"""Downloading an attachment when an Anima asks for it (`AttachmentFetcher`, hub/adapter.py).

`getFile` names the file's path and, usually, its size: a file stated over the cap is
refused before anything is downloaded. The download itself is streamed from the Bot API's
file URL (`<api_url>/file/bot<token>/<path>`) and abandoned as soon as it passes the cap.
The Bot API serves files of at most 20 MB (`getFile` answers "file is too big" beyond).
The file URL carries the bot token: it is never logged or put in an error message.
"""

from __future__ import annotations

import posixpath

import httpx
from telegram import Bot
from telegram.error import BadRequest, TelegramError

from adapters.telegram.normalize import FILE_SCHEME
from hub.adapter import AttachmentTooLarge, AttachmentUnavailable, FetchedFile

BOT_API_MAX_BYTES = 20 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 30.0


async def fetch(bot: Bot, url: str, max_bytes: int) -> FetchedFile:
    if not url.startswith(FILE_SCHEME) or not url.removeprefix(FILE_SCHEME):
        raise AttachmentUnavailable(f"not a Telegram file: {url[:40]!r}")
    file_id = url.removeprefix(FILE_SCHEME)
    try:
        file = await bot.get_file(file_id)
    except BadRequest as exc:
        if "too big" in exc.message.lower():
            raise AttachmentTooLarge(None, min(max_bytes, BOT_API_MAX_BYTES)) from exc
        raise AttachmentUnavailable(f"Telegram does not have it ({exc.message})") from exc
    except TelegramError as exc:
        raise AttachmentUnavailable(f"Telegram getFile failed: {exc}") from exc
    if file.file_size is not None and file.file_size > max_bytes:
        raise AttachmentTooLarge(file.file_size, max_bytes)
    if not file.file_path:
        raise AttachmentUnavailable("Telegram named no path for the file")
    data, content_type = await _download(file.file_path, max_bytes)
    return FetchedFile(data, content_type, posixpath.basename(file.file_path))


async def _download(file_url: str, max_bytes: int) -> tuple[bytes, str]:
    received = bytearray()
    try:
        async with (
            httpx.AsyncClient(timeout=DOWNLOAD_TIMEOUT_S) as client,
            client.stream("GET", file_url) as response,
        ):
            if response.status_code != 200:
                raise AttachmentUnavailable(
                    f"Telegram answered the download with {response.status_code}"
                )
            stated = response.headers.get("Content-Length")
            if stated is not None and stated.isdigit() and int(stated) > max_bytes:
                raise AttachmentTooLarge(int(stated), max_bytes)
            async for piece in response.aiter_bytes():
                received += piece
                if len(received) > max_bytes:
                    raise AttachmentTooLarge(None, max_bytes)
            content_type = response.headers.get("Content-Type", "")
    except httpx.HTTPError as exc:  # its text may hold the URL, and so the token
        raise AttachmentUnavailable(f"the download failed ({type(exc).__name__})") from exc
    if content_type.split(";", 1)[0].strip() == "application/octet-stream":
        content_type = ""  # what Telegram says of every file: no news
    return bytes(received), content_type
