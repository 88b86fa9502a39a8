"""Downloading an attachment when an Anima asks for it (`AttachmentFetcher`, hub/adapter.py).

LINE keeps the content of an image, video, audio or file message for a limited time at
`GET <data_api_url>/v2/bot/message/{messageId}/content` (the api-data host). The download
is streamed (aiohttp, with the channel's bearer token) rather than read whole through
line-bot-sdk's `AsyncMessagingApiBlob.get_message_content`, so that it stops at the cap: a
`Content-Length` over it is refused before the body is read, and a body that grows past it
is abandoned. A file message's stated size (its webhook's `fileSize`) is checked by the hub
before it asks. 404: LINE no longer has it (or never did); 202: a video or audio file LINE
is still preparing.
"""

from __future__ import annotations

import aiohttp

from adapters.line.normalize import CONTENT_SCHEME
from hub.adapter import AttachmentTooLarge, AttachmentUnavailable, FetchedFile

DOWNLOAD_TIMEOUT_S = 30.0
_PIECE = 64 * 1024


async def fetch(data_api_url: str, token: str, url: str, max_bytes: int) -> FetchedFile:
    message_id = url.removeprefix(CONTENT_SCHEME)
    if not url.startswith(CONTENT_SCHEME) or not message_id.isdigit():
        raise AttachmentUnavailable(f"not a LINE message content: {url[:40]!r}")
    address = f"{data_api_url.rstrip('/')}/v2/bot/message/{message_id}/content"
    received = bytearray()
    timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_S)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(address, headers=headers) as response,
        ):
            if response.status == 202:
                raise AttachmentUnavailable("LINE is still preparing the file; ask again soon")
            if response.status == 404:
                raise AttachmentUnavailable(
                    "LINE does not have it (its content is kept only for a while)"
                )
            if response.status != 200:
                raise AttachmentUnavailable(f"LINE answered the download with {response.status}")
            if response.content_length is not None and response.content_length > max_bytes:
                raise AttachmentTooLarge(response.content_length, max_bytes)
            async for piece in response.content.iter_chunked(_PIECE):
                received += piece
                if len(received) > max_bytes:
                    raise AttachmentTooLarge(None, max_bytes)
            content_type = response.headers.get("Content-Type", "")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise AttachmentUnavailable(f"the download failed ({type(exc).__name__})") from exc
    if content_type.split(";", 1)[0].strip() == "application/octet-stream":
        content_type = ""
    return FetchedFile(bytes(received), content_type)
