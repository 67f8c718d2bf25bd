"""Schemathesis hooks for `.ci/schemathesis` (loaded through SCHEMATHESIS_HOOKS).

Generated headers may be named `Transfer-Encoding` or `Content-Length`. Those two frame the
HTTP/1.1 message (RFC 9112, section 6); a random value makes the request invalid HTTP, which the
server's HTTP layer refuses before any route sees it: a bare 400 with no body, and the
connection closed (tests/it/platform.rs checks that). That answer is right, but it is not the
API's, so the document does not describe it; the pass leaves those two headers to the client.
"""

import schemathesis

FRAMING_HEADERS = {"transfer-encoding", "content-length"}


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.headers:
        for name in [n for n in case.headers if n.lower() in FRAMING_HEADERS]:
            del case.headers[name]
