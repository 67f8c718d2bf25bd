"""Loads a discovery document of the server with authlib's metadata model and validates it.

Usage: validate_metadata.py oidc|oauth2 URL

`oidc` reads URL (the OpenID Provider's `.well-known/openid-configuration`) into
`authlib.oidc.discovery.OpenIDProviderMetadata`, `oauth2` (an RFC 8414
`.well-known/oauth-authorization-server` document) into
`authlib.oauth2.rfc8414.AuthorizationServerMetadata`, and calls `validate()`. Exits 0 when it
passes, else 1 with authlib's reason on stderr.
"""

import json
import sys
import urllib.request

from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from authlib.oidc.discovery import OpenIDProviderMetadata

MODELS = {"oidc": OpenIDProviderMetadata, "oauth2": AuthorizationServerMetadata}


def main():
    kind, url = sys.argv[1], sys.argv[2]
    with urllib.request.urlopen(url, timeout=30) as resp:
        document = json.load(resp)
    metadata = MODELS[kind](document)
    try:
        metadata.validate()
    except ValueError as e:
        sys.exit(f"{MODELS[kind].__name__}.validate() refused {url}: {e}")
    print(f"{MODELS[kind].__name__}.validate() passed for {url}")


if __name__ == "__main__":
    main()
