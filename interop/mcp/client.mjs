#!/usr/bin/env node
// An MCP client that signs its user in with the MCP TypeScript SDK's OAuth support: on the
// server's 401 the SDK reads the protected resource metadata (RFC 9728) and the authorization
// server's metadata (RFC 8414), registers this client (RFC 7591, a public client), and builds
// the authorization request with PKCE and the server's URL as the `resource` (RFC 8707). The
// user opens that URL in a browser, signs in and approves; the browser comes back to this
// client's loopback callback, and the SDK exchanges the code. Then the client lists the tools
// and calls one.
//
// Usage: node interop/mcp/client.mjs MCP_URL [TOOL]
//   MCP_URL  the MCP server, such as http://127.0.0.1:3000/mcp
//   TOOL     the tool to call (default list_notes)

import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [serverUrl, tool = 'list_notes'] = process.argv.slice(2);
if (!serverUrl) {
  console.error('usage: node interop/mcp/client.mjs MCP_URL [TOOL]');
  process.exit(2);
}

/** The loopback callback (RFC 8252 7.3) on a port of its own; resolves with the code. */
function startCallback() {
  let settle;
  const code = new Promise((resolve, reject) => {
    settle = { resolve, reject };
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    const error = url.searchParams.get('error');
    if (url.searchParams.get('state') !== provider.expectedState) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('This sign-in was not started here.\n');
      settle.reject(new Error('the callback state is not the one sent'));
    } else if (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`Sign-in failed: ${error}\n`);
      settle.reject(new Error(`authorization failed: ${error} ${url.searchParams.get('error_description') ?? ''}`));
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in: you can close this window.\n');
      settle.resolve(url.searchParams.get('code'));
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}/callback`, code, close: () => server.close() });
    });
  });
}

/** The SDK's OAuthClientProvider, in memory: the registration, the tokens, the PKCE verifier. */
class InMemoryProvider {
  constructor(redirectUrl) {
    this.redirectUrl = redirectUrl;
    this.clientMetadata = {
      client_name: 'Tessera interop MCP client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  state() {
    this.expectedState = randomBytes(16).toString('base64url');
    return this.expectedState;
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(client) {
    this.client = client;
  }

  tokens() {
    return this.savedTokens;
  }

  saveTokens(tokens) {
    this.savedTokens = tokens;
  }

  redirectToAuthorization(authorizationUrl) {
    console.log(`Open this URL in a browser to sign in:\n${authorizationUrl.href}`);
  }

  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }
}

const callback = await startCallback();
const provider = new InMemoryProvider(callback.url);
const client = new Client({ name: 'tessera-interop-client', version: '1.0.0' });

let transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
try {
  await client.connect(transport);
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  // The SDK registered the client and printed the authorization URL: wait for the browser.
  await transport.finishAuth(await callback.code);
  transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
  await client.connect(transport);
}
callback.close();
console.log(`Registered as ${provider.client.client_id}; signed in.`);

const { tools } = await client.listTools();
console.log(`Tools: ${tools.map((t) => t.name).join(', ')}`);
const result = await client.callTool({ name: tool, arguments: {} });
for (const part of result.content) if (part.type === 'text') console.log(`${tool}: ${part.text}`);
await client.close();
process.exit(result.isError ? 1 : 0);
