#!/usr/bin/env python3
"""Gives a freshly started Tessera server the credentials a schemathesis pass needs.

Usage: provision.py BASE_URL TESSERA_BINARY ADMIN_SOCKET DATA_DIR

Creates a tenant (admin CLI), turns on what is off by default so its routes do more than
answer 403, signs up and confirms three end users, signs each in, opens two dashboard sessions
for the owner, and makes a second tenant whose owner's session has just re-authenticated, for
the API-key rotation, and a management key of the first tenant. Prints shell `export` lines for schemathesis.toml's variables:

  TESSERA_ST_API_KEY           the tenant's API key (scheme `api_key`)
  TESSERA_ST_SLUG              the tenant's slug (every `{slug}` path parameter)
  TESSERA_ST_USER_TOKEN        an end user's access token (scheme `bearer`)
  TESSERA_ST_LOGOUT_TOKEN      another user's access token, for logout
  TESSERA_ST_SESSIONS_TOKEN    a third user's access token, for ending one session by id
  TESSERA_ST_DASHBOARD_SESSION the owner's dashboard session (scheme `dashboard_session`)
  TESSERA_ST_DASHBOARD_LOGOUT  a second session of the owner, for dashboard logout
  TESSERA_ST_ROTATE_SLUG       the second tenant, whose API key the pass may rotate
  TESSERA_ST_ROTATE_SESSION    its owner's session, re-authenticated (valid 5 minutes)
  TESSERA_ST_MANAGEMENT_KEY    an admin management key of the tenant (scheme `management_key`)
  TESSERA_ST_KEYS_SESSION      the owner's session that made it, re-authenticated (5 minutes)

Standard library only: it runs before anything is installed.
"""

import json
import pathlib
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

OWNER_EMAIL = "owner@example.com"
OWNER_PASSWORD = "schemathesis owner passphrase"
USER_PASSWORD = "schemathesis user passphrase"
SLUG = "st"
ROTATE_OWNER_EMAIL = "rotate-owner@example.com"
ROTATE_SLUG = "st-rotate"


def call(base, method, path, body=None, headers=None, expect=(200,)):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("user-agent", "tessera-schemathesis-provision")
    if body is not None:
        req.add_header("content-type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    if status not in expect:
        sys.exit(f"provision: {method} {path} answered {status}: {raw[:500]!r}")
    return json.loads(raw) if raw else None


def admin(binary, socket, args, stdin=""):
    out = subprocess.run(
        [binary, "admin", "--socket", socket, *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"provision: tessera admin {' '.join(args)} failed: {out.stderr}")
    return json.loads(out.stdout)


def verification_token(outbox, email, deadline=30.0):
    """The `token=` of the newest verification mail to `email` in the file outbox."""
    pattern = re.compile(r"verify-email\?token=([A-Za-z0-9_-]+)")
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        mails = sorted(outbox.glob("*.eml"), key=lambda p: p.stat().st_mtime, reverse=True)
        for mail in mails:
            text = mail.read_text(errors="replace")
            if f"To: {email}" in text and "X-Tessera-Kind: verify_email" in text:
                m = pattern.search(text)
                if m:
                    return m.group(1)
        time.sleep(0.1)
    sys.exit(f"provision: no verification mail for {email} in {outbox}")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    base, binary, socket, data_dir = sys.argv[1:]
    outbox = pathlib.Path(data_dir) / "outbox"

    created = admin(
        binary,
        socket,
        ["tenant", "create", "--name", "Schemathesis", "--slug", SLUG, "--owner-email", OWNER_EMAIL],
        stdin=OWNER_PASSWORD + "\n",
    )
    key = created["api_key"]
    slug = created["tenant"]["slug"]
    api = {"X-API-Key": key}

    # Dashboard: one session for the pass, one for the logout route to end.
    login = {"email": OWNER_EMAIL, "password": OWNER_PASSWORD}
    session = call(base, "POST", "/v1/auth/dashboard/login", login)["session_token"]
    logout_session = call(base, "POST", "/v1/auth/dashboard/login", login)["session_token"]
    dash = {"Authorization": f"Bearer {session}"}
    settings = f"/v1/auth/dashboard/tenants/{slug}/settings"
    call(base, "PATCH", f"{settings}/security",
         {"sms_otp_enabled": True, "explicit_account_linking_enabled": True}, dash)
    call(base, "PATCH", f"{settings}/anonymous", {"anonymous_signins_enabled": True},
         {**dash, "X-Service-Confirm": "privileged-default-role"})

    # A second tenant with a re-authenticated owner: API-key rotation needs one, and rotating
    # this tenant's key leaves the pass's own key alone.
    admin(
        binary,
        socket,
        ["tenant", "create", "--name", "Schemathesis rotation", "--slug", ROTATE_SLUG,
         "--owner-email", ROTATE_OWNER_EMAIL],
        stdin=OWNER_PASSWORD + "\n",
    )
    rotate_session = call(base, "POST", "/v1/auth/dashboard/login",
                          {"email": ROTATE_OWNER_EMAIL, "password": OWNER_PASSWORD})["session_token"]
    call(base, "POST", "/v1/auth/dashboard/reauth", {"password": OWNER_PASSWORD},
         {"Authorization": f"Bearer {rotate_session}"})

    # A management key, made with a third session of the owner re-authenticated for the
    # management-key routes alone (the pass's own session stays without a recent one).
    key_session = call(base, "POST", "/v1/auth/dashboard/login", login)["session_token"]
    key_dash = {"Authorization": f"Bearer {key_session}"}
    call(base, "POST", "/v1/auth/dashboard/reauth", {"password": OWNER_PASSWORD}, key_dash)
    management_key = call(base, "POST", f"/v1/auth/dashboard/tenants/{slug}/management-keys",
                          {"name": "schemathesis", "role": "admin"}, key_dash,
                          expect=(201,))["key"]

    # End users, confirmed and signed in.
    tokens = {}
    for name in ("user", "logout", "sessions"):
        email = f"{name}@example.com"
        call(base, "POST", "/v1/auth/register",
             {"email": email, "password": USER_PASSWORD, "consent": True}, api)
        token = verification_token(outbox, email)
        call(base, "POST", "/v1/auth/verify-email", {"token": token}, api)
        pair = call(base, "POST", "/v1/auth/login", {"email": email, "password": USER_PASSWORD}, api)
        tokens[name] = pair["access_token"]

    exports = {
        "TESSERA_ST_API_KEY": key,
        "TESSERA_ST_SLUG": slug,
        "TESSERA_ST_USER_TOKEN": tokens["user"],
        "TESSERA_ST_LOGOUT_TOKEN": tokens["logout"],
        "TESSERA_ST_SESSIONS_TOKEN": tokens["sessions"],
        "TESSERA_ST_DASHBOARD_SESSION": session,
        "TESSERA_ST_DASHBOARD_LOGOUT": logout_session,
        "TESSERA_ST_ROTATE_SLUG": ROTATE_SLUG,
        "TESSERA_ST_ROTATE_SESSION": rotate_session,
        "TESSERA_ST_MANAGEMENT_KEY": management_key,
        "TESSERA_ST_KEYS_SESSION": key_session,
    }
    for k, v in exports.items():
        print(f"export {k}='{v}'")


if __name__ == "__main__":
    main()
