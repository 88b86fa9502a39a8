"""The sign-in link (`animahub people invite NAME`): /signin/<token> opens a web session.

Opening the link only shows a button; the POST it sends uses the token. A link preview
(Slack, Discord and LINE fetch links they see) thus cannot use up a single-use link, and
another site cannot sign a visitor in as someone else (its POST carries its own Origin).
The owner's link (`animahub start`, `animahub signin`, `POST /api/signin/owner`) is printed
in the owner's terminal, never posted anywhere: its page sends the POST by itself.

The POST's answer sets the session cookie and hands the hub's page the session's page key
(hub/people/credentials.py `page_key`), which signin.js keeps in the hub's origin's local storage:
the
only way the key reaches a page, so a session cookie planted from another port, without it,
is nobody."""

from __future__ import annotations

import html
import logging
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from hub.adapter import Caller, caller_of
from hub.api.auth import SESSION_COOKIE
from hub.api.routes import HubDep
from hub.app import Hub
from hub.people.credentials import OWNER_LABEL, SESSION_TTL, Refused, SignInRefused, page_key

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

_STATUS = {Refused.UNKNOWN: 404, Refused.USED: 410, Refused.EXPIRED: 410}
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>AnimaHub: sign in</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/style.css"></head>
<body class="signin"><main class="signin-card"><h1>AnimaHub</h1>{body}</main>
<script src="/dashboard-assets/signin.js"></script></body></html>
"""


def _page(body: str, status: int = 200) -> HTMLResponse:
    # The token is in the URL: no cache may keep the page.
    return HTMLResponse(_PAGE.format(body=body), status, headers={"Cache-Control": "no-store"})


def _refused(exc: SignInRefused) -> HTMLResponse:
    return _page(f'<p class="signin-error">{html.escape(str(exc))}</p>', _STATUS[exc.reason])


def _same_origin(request: Request) -> bool:
    """Browsers say where a form was sent from in Sec-Fetch-Site; older ones only in Origin
    (which the hub's no-referrer policy may turn into "null", refused then)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site == "same-origin"
    origin = request.headers.get("origin")
    if origin is None:
        return True  # not a browser's cross-site form: those always carry Origin
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


@router.get("/signin/{token}")
def signin_page(token: str, hub: HubDep) -> HTMLResponse:
    try:
        link = hub.access.signin_link(token)
    except SignInRefused as exc:
        return _refused(exc)
    person = hub.identity.by_id(link.person_id)
    auto = " data-auto" if link.label == OWNER_LABEL else ""
    return _page(
        f"<p>Sign in to this hub's web chat as <strong>{html.escape(person.display_name)}"
        "</strong>?</p>"
        f'<form method="post" action="/signin"{auto}>'
        f'<input type="hidden" name="token" value="{html.escape(token)}">'
        '<button type="submit" class="button">Sign in</button></form>'
    )


@router.post("/signin")
async def signin(request: Request, hub: HubDep) -> Response:
    if not _same_origin(request):
        return _page('<p class="signin-error">Sign-in from another site refused.</p>', 403)
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0]
    try:
        session = hub.access.redeem_signin(token)
    except SignInRefused as exc:
        return _refused(exc)
    log.info("%s signed in to the web chat (session %s)", session.person_id, session.id)
    # Only this answer ever carries the key; signin.js keeps it and opens the chat.
    response = _page(
        f'<p id="page-key" data-key="{page_key(session.secret)}" data-next="/">Signed in; '
        'opening the web chat…</p><noscript><p class="signin-error">The web chat needs '
        "JavaScript.</p></noscript>"
    )
    response.set_cookie(
        SESSION_COOKIE,
        session.secret,
        max_age=int(SESSION_TTL.total_seconds()),
        path="/",
        httponly=True,  # no script, not even the hub's own page, reads it
        samesite="strict",  # never sent with a request another site starts
        secure=hub.settings.server.https,
    )
    return response


def _caller(request: Request) -> Caller:
    return caller_of(request.scope)


@router.post("/api/signin/owner", status_code=201)
def owner_link(hub: HubDep, caller: Annotated[Caller, Depends(_caller)]) -> dict[str, Any]:
    """A new one-time sign-in link for the owner's browser (`animahub signin`); for the
    owner and the admin token only (hub/api/auth.py), as every route outside a person's."""
    link = owner_signin(hub, f"{caller.kind.value}:{caller.person_id}")
    hub.people.audit(caller, "person.owner_signin", link["person"])
    return link


def owner_signin(hub: Hub, created_by: str) -> dict[str, Any]:
    """A new owner's sign-in link: its session has the owner's rights."""
    owner = hub.identity.owner()
    issued = hub.access.create_owner_signin(owner.id, created_by=created_by)
    expires = issued.expires_at.isoformat() if issued.expires_at is not None else None
    return {
        "person": owner.id,
        "name": owner.display_name,
        "url": f"{hub.settings.server.link_base()}/signin/{issued.secret}",
        "expires_at": expires,
    }
