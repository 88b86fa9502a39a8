"""The sign-in link (`animahub people invite NAME`): /signin/<token> opens a web session.

Opening the link only shows a button; the POST it sends uses the token. A link preview
(Slack, Discord and LINE fetch links they see) thus cannot use up a single-use link, and
another site cannot sign a visitor in as someone else (its POST carries its own Origin)."""

from __future__ import annotations

import html
import logging
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from hub.access import SESSION_TTL, Refused, SignInRefused
from hub.api.auth import SESSION_COOKIE
from hub.api.routes import HubDep

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

_STATUS = {Refused.UNKNOWN: 404, Refused.USED: 410, Refused.EXPIRED: 410}
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>AnimaHub: sign in</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/style.css"></head>
<body class="signin"><main class="signin-card"><h1>AnimaHub</h1>{body}</main></body></html>
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
        person = hub.identity.by_id(hub.access.check_signin(token))
    except SignInRefused as exc:
        return _refused(exc)
    return _page(
        f"<p>Sign in to this hub's web chat as <strong>{html.escape(person.display_name)}"
        "</strong>?</p>"
        '<form method="post" action="/signin">'
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
    response = RedirectResponse("/", status_code=303)
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
