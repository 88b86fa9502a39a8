"""`animahub people …` and `animahub token …`: the owner, sign-in links, sessions, tokens.

Each goes through the hub's API (a running hub's, or an in-process one's), as the owner or
with the admin token, so the same rules and audit entries apply (docs/people.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from hub.cli.console import HELP_MARKUP, console, err, given, id_table, print_error, styled
from hub.cli.hub_api import by_name, call, existing, quoted, ref

people_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="The owner, linked accounts, sign-in links and sessions.",
    no_args_is_help=True,
)
token_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="People's own API tokens.", no_args_is_help=True
)
pairing_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Strangers waiting to be let in to DMs ([people] dm_policy = pairing).",
    no_args_is_help=True,
)


_NEW_HINTS = {
    404: "check the spelling (`animahub people list`), or add --new to create them",
    409: "leave out --new to use them",
}


def short_time(at: str | None) -> str:
    """An API timestamp as a table shows it: `2026-12-02 04:58`."""
    return at[:16].replace("T", " ") if at else ""


def _print_credentials(rows: list[dict[str, Any]], none: str) -> None:
    """The tokens or sessions as a table; `none` in words when there are none (an empty
    table's header alone read like a fault)."""
    console.print(_credential_table(rows) if rows else none, highlight=False)


def _credential_table(rows: list[dict[str, Any]]) -> Table:
    return id_table(
        ("id", "person", "label", "created", "last used", "expires"),
        [
            (
                row["id"],
                row["person"],
                row["label"],
                short_time(row["created_at"]),
                short_time(row["last_used_at"]),
                short_time(row["expires_at"]) or "never",
            )
            for row in rows
        ],
    )


@people_app.command("list")
def people_list() -> None:
    """Everyone the hub knows, with their roles and the platforms they are on."""
    rows = [
        (p["id"], p["name"], ", ".join(p["roles"]), ", ".join(p["platforms"]))
        for p in call("GET", "/api/people")
    ]
    console.print(id_table(("id", "name", "roles", "platforms"), rows))


def _print_person(person: dict[str, Any]) -> None:
    console.print(styled((person["name"], "bold"), f" ({person['id']})"), highlight=False)
    console.print(f"roles: {', '.join(person['roles']) or 'none'}", highlight=False)
    if person["aliases"]:
        console.print(f"merged in: {', '.join(person['aliases'])}", highlight=False)
    rows = [(a["platform"], a["user_id"], a["name"]) for a in person["accounts"]]
    console.print(id_table(("platform", "user id", "name"), rows, whole=("user id",)))


@people_app.command("show")
def people_show(
    name: Annotated[str, typer.Argument(help="A person's id or name.", callback=given)],
) -> None:
    """One person: roles, linked accounts, merged ids."""
    _print_person(existing(name))


@people_app.command("handoffs")
def people_handoffs(
    name: Annotated[str, typer.Argument(help="A person's id or name.", callback=given)],
) -> None:
    """Where NAME left off with each Anima: the handoffs of their DM sessions."""
    rows = call("GET", f"/api/people/{ref(existing(name))}/handoffs")
    if not rows:
        console.print(f"no handoffs for {name}", highlight=False)
        return
    table = Table("anima", "ended", "where", "status", "discussed", "open / next")
    for row in rows:
        ahead = [*row["open_questions"], *row["next_steps"]]
        table.add_row(
            row["anima"],
            short_time(row["ended_at"]),
            row["where"],
            row["status"],
            row["discussed"],
            "\n".join(ahead),
        )
    console.print(table)


@people_app.command("link")
def people_link(
    name: Annotated[str, typer.Argument(help="The person.", callback=given)],
    account: Annotated[str, typer.Argument(help="PLATFORM:USER_ID, e.g. slack:U024BE7LH.")],
    merge: Annotated[
        bool,
        typer.Option("--merge", help="The account's person has more: merge all of them in."),
    ] = False,
) -> None:
    """Link a platform account to a person. Whoever had it is merged in if that account was
    all they had; someone with more (accounts, tokens, roles) only with --merge."""
    platform, _, user_id = account.partition(":")
    if not platform or not user_id:
        print_error("the account is PLATFORM:USER_ID")
        raise typer.Exit(2)
    body = {"platform": platform, "user_id": user_id, "merge": merge}
    _print_person(call("POST", f"/api/people/{ref(existing(name))}/accounts", body))


@people_app.command("unlink")
def people_unlink(
    name: Annotated[str, typer.Argument(help="The person.", callback=given)],
    account: Annotated[
        str,
        typer.Argument(
            help="PLATFORM (slack, discord, telegram, line or web), or PLATFORM:USER_ID when "
            "NAME has several accounts there.",
            callback=given,
        ),
    ],
) -> None:
    """The person's account on a platform (or the one named) becomes a person of its own."""
    answer = call("DELETE", f"/api/people/{ref(existing(name))}/accounts/{quoted(account)}")
    person, split = answer["person"], answer["split"]
    accounts = ", ".join(f"{a['platform']}:{a['user_id']}" for a in split["accounts"])
    # One line at any width (rich broke it mid-sentence at 80 columns); "5551234 (5551234)"
    # when the name is the id said nothing twice.
    console.print(
        f"unlinked {accounts} from {_who(person)}; it is {_who(split)} now, a person of its own",
        highlight=False,
        soft_wrap=True,
    )


def _who(person: dict[str, Any]) -> str:
    """A person as a sentence names them: `Dana (dana-2)`, or `5551234` when that is both."""
    name, person_id = person["name"], person["id"]
    return name if name == person_id else f"{name} ({person_id})"


@people_app.command("forget")
def people_forget(
    name: Annotated[str, typer.Argument(help="The person.", callback=given)],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
) -> None:
    """Delete what the Animas keep private to NAME, what they learned about them, and their
    DM conversations (for good; who they are is kept)."""
    # Who first: asked about a typo, one said yes to forgetting nobody, then got the 404.
    person = existing(name)
    if not yes and not typer.confirm(f"Forget everything private to {_who(person)}, for good?"):
        err.print(f"nothing was forgotten of {person['name']}", highlight=False)
        raise typer.Exit(1)
    gone = call("POST", f"/api/people/{ref(person)}/forget")
    per = ", ".join(f"{a}: {n}" for a, n in gone["memories"].items()) or "none"
    console.print(
        f"forgotten: {sum(gone['memories'].values())} memories ({per}), "
        f"{gone['facts']} profile facts, {gone['turns']} DM turns, "
        f"{gone['handoffs']} handoffs",
        highlight=False,
    )


@people_app.command("merge")
def people_merge(
    name: Annotated[str, typer.Argument(help="Who is merged away.", callback=given)],
    into: Annotated[str, typer.Argument(help="Who they become.", callback=given)],
) -> None:
    """NAME becomes part of INTO: accounts, profile and private memory."""
    source, target = existing(name), existing(into)
    body = {"into": f"person:{target['id']}"}
    _print_person(call("POST", f"/api/people/{ref(source)}/merge", body))


@people_app.command("owner")
def people_owner(
    name: Annotated[
        str | None, typer.Argument(help="The new owner (default: show it).", callback=given)
    ] = None,
    new: Annotated[
        bool, typer.Option("--new", help="NAME is someone new: create them (refused if known).")
    ] = False,
) -> None:
    """Show the hub's owner, or make NAME the owner (someone the hub knows, unless --new)."""
    if name is None:
        owner = call("GET", "/api/people/owner")
    else:
        owner = by_name(
            name,
            lambda who, chose_new: call(
                "PUT",
                "/api/people/owner",
                {"name": who, "create": new or chose_new, "new": new or chose_new},
                hints=_NEW_HINTS,
            ),
            can_new=True,
        )
    console.print(styled("owner: ", (owner["name"], "bold"), f" ({owner['id']})"), highlight=False)


@people_app.command("audit")
def people_audit() -> None:
    """People whose id the hub made from a platform's display name and who collide with a
    name used in config, an invite or another person: a stranger may have taken a
    teammate's name. Each with their accounts and how to split the stranger off."""
    found = call("GET", "/api/people/audit")
    if not found:
        console.print("no one took a name the hub's config or invites use", highlight=False)
        return
    rows = [
        (
            row["id"],
            row["name"],
            "\n".join(row["accounts"]),
            "\n".join(row["why"]),
            "\n".join(f"animahub people unlink person:{row['id']} {a}" for a in row["split"])
            or "nothing to split: name them by id",
        )
        for row in found
    ]
    console.print(id_table(("id", "name", "accounts", "why", "split with"), rows))


@people_app.command("invite")
def people_invite(
    name: Annotated[str, typer.Argument(help="Who may sign in: an id or a name.", callback=given)],
    new: Annotated[
        bool, typer.Option("--new", help="NAME is someone new, whoever else goes by it.")
    ] = False,
) -> None:
    """Print a one-time sign-in link (15 minutes) for the web chat (NAME created if new; a
    name others go by is asked about)."""
    link = by_name(
        name,
        lambda who, chose_new: call(
            "POST", f"/api/people/{quoted(who)}/invite", {"new": new or chose_new}, ok=201
        ),
        can_new=True,
    )
    if link["created"]:  # a typo makes a new person: say so
        console.print(f"new person: {link['name']} ({link['person']})", highlight=False)
    console.print(
        f"Sign-in link for {link['name']} (once, until {link['expires_at']}):", highlight=False
    )
    console.out(link["url"], highlight=False)


@people_app.command("sessions")
def people_sessions(
    name: Annotated[str, typer.Argument(help="Whose sessions.", callback=given)],
) -> None:
    """List NAME's open web chat sessions."""
    _print_credentials(
        call("GET", f"/api/people/{ref(existing(name))}/sessions"), "no open sessions"
    )


@people_app.command("revoke")
def people_revoke(
    session: Annotated[str, typer.Argument(help="A session id (s-…).", callback=given)],
) -> None:
    """End a web chat session: its next request is refused."""
    row = call("DELETE", f"/api/sessions/{quoted(session)}")
    console.print(f"revoked session {row['id']} of {row['person']}", highlight=False)


@token_app.command("create")
def token_create(
    person: Annotated[str, typer.Option("--person", help="Whose token.", callback=given)],
    label: Annotated[str, typer.Option(help="What it is for.")] = "",
    new: Annotated[
        bool, typer.Option("--new", help="PERSON is someone new: create them (refused if known).")
    ] = False,
) -> None:
    """Make an API token that acts as PERSON (someone the hub knows, unless --new); it is
    printed once and stored hashed."""
    made = by_name(
        person,
        lambda who, chose_new: call(
            "POST",
            "/api/tokens",
            {"person": who, "label": label, "create": new, "new": new or chose_new},
            ok=201,
            hints=_NEW_HINTS,
        ),
        can_new=True,
    )
    err.print(f"token {made['id']} for {made['person']} (shown once):", highlight=False)
    console.out(made["token"], highlight=False)


@token_app.command("list")
def token_list(
    person: Annotated[
        str | None, typer.Option("--person", help="Only this person's.", callback=given)
    ] = None,
) -> None:
    """List live API tokens (never their secrets)."""
    path = "/api/tokens" + (f"?person={ref(existing(person))}" if person else "")
    _print_credentials(call("GET", path), "no live API tokens")


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="A token id (t-…).", callback=given)],
) -> None:
    """Revoke an API token: requests with it are refused from now on."""
    row = call("DELETE", f"/api/tokens/{quoted(token_id)}")
    console.print(f"revoked token {row['id']} of {row['person']}", highlight=False)


@pairing_app.command("list")
def pairing_list() -> None:
    """Who is waiting, where they wrote from, since when."""
    table = Table("request", "person", "where", "since")
    for row in call("GET", "/api/pairing"):
        table.add_row(row["id"], row["person"], row["where"], row["since"])
    console.print(table)


@pairing_app.command("approve")
def pairing_approve(
    code: Annotated[
        str,
        typer.Argument(help="The code the person was given, or a request id.", callback=given),
    ],
) -> None:
    """Let the person in: their DMs reach the Animas from now on."""
    person = call("POST", f"/api/pairing/{quoted(code)}/approve")
    console.print(f"let in: {person['name']} ({person['id']})", highlight=False)
