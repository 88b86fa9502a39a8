"""How the fake Notion refuses a request it looked at: `Invalid` carries the status, code and
message of Notion's error object; an unknown (or unshared) id and a malformed one in a path."""

from __future__ import annotations

import json

from animahub_kit.fakes.notion.model import canonical_id

SHARE_HINT = "Make sure the relevant pages and databases are shared with your integration."


class Invalid(Exception):
    """A request Notion would refuse: status, code and message of the error object."""

    def __init__(self, message: str, status: int = 400, code: str = "validation_error") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def not_found(kind: str, object_id: str) -> Invalid:
    return Invalid(
        f"Could not find {kind} with ID: {object_id}. {SHARE_HINT}", 404, "object_not_found"
    )


def path_id(raw: str, name: str) -> str:
    found = canonical_id(raw)
    if found is None:
        raise Invalid(
            f"path failed validation: path.{name} should be a valid uuid, "
            f"instead was `{json.dumps(raw)}`."
        )
    return found
