"""One privacy scope for text posted to several places (hub/turns/thinking.py): a task whose
report goes to a DM and a channel is thought with only what is shared, so nothing private
to the DM's person is recalled into words the channel will read."""

from __future__ import annotations

from hub.delivery.targets import Resolved
from hub.memory.recall import RecallScope
from hub.messages import Address, AddressKind
from hub.people.identity import PersonView
from hub.turns.thinking import scope_for

DANA = PersonView("dana", "Dana", (), "UTC", "", None)
DANA_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
OPS_CHANNEL = Address("slack", "T1", "C0OPS")
DM = Resolved("dm:slack:U0DANA", DANA_DM, DANA)
OPS = Resolved("slack:T1/C0OPS", OPS_CHANNEL)
NOWHERE = Resolved("slack:T1/C0GONE", error="channel_not_found")


def test_one_place_is_thought_in_its_own_scope() -> None:
    assert scope_for("kai", [DM]) == RecallScope("kai", "dana", DANA_DM.channel_key, True)
    assert scope_for("kai", [OPS, NOWHERE]) == RecallScope(
        "kai", None, OPS_CHANNEL.channel_key, False
    )


def test_a_dm_and_a_channel_together_see_only_what_is_shared() -> None:
    scope = scope_for("kai", [DM, OPS])
    assert scope.scopes() == ("shared",) and not scope.is_dm
    assert scope_for("kai", []).scopes() == ("shared",)
