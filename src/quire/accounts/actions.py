"""Account actions of the admin's users page: users, roles and sessions
changed together in one transaction (deactivating or deleting a user ends
its sessions in the same commit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from quire.errors import BadRequest, NotFound

if TYPE_CHECKING:
    from quire.modules import Services
    from quire.ui.web import Login


async def user_action(quire: Services, login: Login, action: str, form: dict[str, str]) -> str:
    """Run one action of the users page; the message to show. The write
    lock is waited for off the event loop."""
    async with quire.store.atomic():
        return _user_action(quire, login, action, form)


def _user_action(quire: Services, login: Login, action: str, form: dict[str, str]) -> str:
    fields: dict[str, Any] = {k: form[k] for k in ("user", "email", "name", "role", "password") if k in form}
    if action == "create":
        if not str(fields.get("role", "")).strip():
            # The form starts with no role chosen (not "admin"): one must be picked.
            raise BadRequest("Choose a role for the new user", fields=["role"])
        user = quire.users.create(fields, login.identity)
        return f"User {user['user']} created."
    target = form.get("id", "")
    if action == "update":
        fields["active"] = form.get("active") == "on"
        if target == login.user["_id"] and (not fields["active"] or fields.get("role") != login.user["role"]):
            raise BadRequest("You cannot deactivate yourself or change your own role")
        user = quire.users.update(target, fields, login.identity)
        if not user["active"]:
            quire.sessions.end_user(target)
        return f"User {user['user']} saved."
    if action == "delete":
        if target == login.user["_id"]:
            raise BadRequest("You cannot delete yourself")
        quire.users.delete(target, login.identity)
        quire.sessions.end_user(target)
        return "User deleted."
    if action == "end-session":
        if not quire.sessions.end(form.get("session", ""), "ended", login.identity):
            raise NotFound("Session not found")
        return "Session ended."
    raise BadRequest("Unknown action")
