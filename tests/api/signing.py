"""Signing a test client in as a browser does: the sign-in form's POST, whose answer sets the
session cookie and carries the page key the hub's page keeps and sends as X-Page-Key
(hub/api/signin.py, hub/people/credentials.py `page_key`)."""

from __future__ import annotations

import re

import httpx

PAGE_KEY = re.compile(r'id="page-key" data-key="([0-9a-f]{64})"')


def same_origin() -> dict[str, str]:
    """What a browser sends with the sign-in page's own form."""
    return {"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost"}


def page_key_in(answer: httpx.Response) -> str:
    found = PAGE_KEY.search(answer.text)
    assert found is not None, f"no page key in the sign-in answer:\n{answer.text}"
    return found.group(1)


async def sign_in(client: httpx.AsyncClient, link: str) -> str:
    """Open the session of a sign-in link (its URL, path or token) in `client`'s cookie jar
    and send its page key from now on, as the web chat does; returns the key."""
    token = link.rstrip("/").rsplit("/", 1)[-1]
    answer = await client.post("/signin", data={"token": token}, headers=same_origin())
    assert answer.status_code == 200, answer.text
    key = page_key_in(answer)
    client.headers["X-Page-Key"] = key
    return key
