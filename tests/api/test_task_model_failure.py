"""A task whose model fails, by the failure's kind (issue 47): one that no retry mends is
failed at once with the plain reason for people and the fix on the board; one a retry can
mend is tried again and its failure told in plain words, never the provider's text."""

from __future__ import annotations

from typing import Any

from hub.app import Hub
from hub.model.failure import FailureKind
from hub.store.models import TaskState
from tests.api.test_delegation import delegate, deliveries, mika, modelled, settled

__all__ = ["modelled"]  # the fixture, from the delegation tests


async def test_a_refused_key_fails_the_task_at_once_in_plain_words(
    modelled: Hub, fake_openai: Any
) -> None:
    hub = modelled
    fake_openai.fail_next(401, None, "Incorrect API key provided: sk-abc***xyz", model="kai")
    await delegate(hub, mika(person_id=None), to="kai", title="Check the build")
    task = await settled(hub, 1, TaskState.FAILED)
    assert [s.to_state for s in task.steps] == ["todo", "running", "failed"]  # not retried
    assert len([r for r in fake_openai.requests if r["model"] == "kai"]) == 1
    kind = FailureKind.KEY_REFUSED
    assert task.result is not None and kind.fix in task.result  # the operator's fix
    [told] = deliveries(hub, "task:1")
    assert kind.for_person in told.text and "tried once" in told.text
    assert "Incorrect API key" not in told.text and "litellm" not in told.text


async def test_a_failing_provider_is_retried_and_told_plainly(
    modelled: Hub, fake_openai: Any
) -> None:
    hub = modelled
    for _ in range(2):
        fake_openai.fail_next(503, None, "upstream connect error", model="kai")
    await delegate(hub, mika(person_id=None), to="kai", title="Check the build")
    task = await settled(hub, 1, TaskState.FAILED)
    assert [s.to_state for s in task.steps] == ["todo", "running", "todo", "running", "failed"]
    [told] = deliveries(hub, "task:1")
    assert FailureKind.SERVER_ERROR.for_person in told.text and "tried 2 times" in told.text
    assert "upstream connect error" not in told.text and "503" not in told.text
