"""The OpenAI-style error answers: what a scripted :class:`Failure` is served as."""

from __future__ import annotations

import uuid

from starlette.responses import JSONResponse

from animahub_kit.fakes.openai_fake.script import Failure

_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def error_response(failure: Failure) -> JSONResponse:
    """An OpenAI-style error answer, with ``Retry-After`` when asked for."""
    kind, code = _ERROR_KINDS.get(failure.status, ("api_error", None))
    message = failure.message or f"Fake OpenAI injected error (HTTP {failure.status})."
    headers = {"x-request-id": f"req_{uuid.uuid4().hex}"}
    if failure.retry_after is not None:
        headers["retry-after"] = f"{failure.retry_after:g}"
    content = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(content, status_code=failure.status, headers=headers)
