"""The dashboard's login: none when the API has no token; a token form when it has one.

The HTTP API takes `Authorization: Bearer <token>` (`service.dependencies.require_token`);
a browser following links cannot send that header. So, when the server has a token:

  - `/ui/login` asks for it; a right token sets the cookie `batchplace_ui` to
    HMAC-SHA256(token, "batchplace-ui-session") — not the token itself, so the cookie
    opens the read-only pages and nothing under `/v1`. It is `HttpOnly`,
    `SameSite=Strict` (no other site can make the browser send it: no CSRF on the upload
    form) and scoped to `Path=/ui`. Compared in constant time, like the bearer token.
  - every page checks the cookie and sends a browser without it to the login page;
  - the What-if page calls `POST /v1/what-if` itself, with the bearer token the login
    form also kept in the tab's `sessionStorage` (gone when the tab closes); a 401 there
    asks for the token again.

Without a token every page opens as it is, as the API does. Static files (CSS, script)
hold no data and are always served.
"""

from __future__ import annotations

import hashlib
import hmac

from pydantic import SecretStr

__all__ = ["COOKIE_NAME", "session_value", "session_ok", "token_ok", "safe_next"]

COOKIE_NAME = "batchplace_ui"
_SESSION_MESSAGE = b"batchplace-ui-session"


def session_value(token: SecretStr) -> str:
    return hmac.new(token.get_secret_value().encode("utf-8"), _SESSION_MESSAGE, hashlib.sha256).hexdigest()


def session_ok(token: SecretStr | None, cookie: str | None) -> bool:
    """True when the server has no token, or `cookie` is this token's session value."""
    if token is None:
        return True
    if not cookie:
        return False
    return hmac.compare_digest(cookie.encode("utf-8"), session_value(token).encode("utf-8"))


def token_ok(token: SecretStr, presented: str) -> bool:
    return hmac.compare_digest(presented.strip().encode("utf-8"), token.get_secret_value().encode("utf-8"))


def safe_next(target: str | None) -> str:
    """Where to go after login: a path under `/ui/` of this server, never another site."""
    if target and target.startswith("/ui") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/cluster"
