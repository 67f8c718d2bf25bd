#!/usr/bin/env node
// An MCP server whose users sign in with a Tessera tenant, made of the MCP TypeScript SDK's own
// pieces: its Express app, its Streamable HTTP server transport (stateless), its bearer-auth
// middleware, and its resource-server metadata router, which serves the protected resource
// metadata (RFC 9728) naming the tenant as the authorization server. Access tokens are ES256
// JWTs (RFC 9068) checked against the tenant's JWKS with jose: the tenant's issuer, this
// server's URL as the audience (the RFC 8707 resource the client asked for), and the scope.
//
// Usage: node interop/mcp/server.mjs ISSUER MCP_URL
//   ISSUER   the tenant's issuer, such as http://127.0.0.1:8080/v1/tenants/acme
//   MCP_URL  where this server answers, registered as the tenant's resource,
//            such as http://127.0.0.1:3000/mcp
// Prints "MCP server listening on MCP_URL" once it serves.

import { discoverAuthorizationServerMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { getOAuthProtectedResourceMetadataUrl, mcpAuthMetadataRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';

/** The scope the tenant's catalog approves for this resource; every tool needs it. */
const SCOPE = 'notes:read';

const [issuerArg, mcpUrlArg] = process.argv.slice(2);
if (!issuerArg || !mcpUrlArg) {
  console.error('usage: node interop/mcp/server.mjs ISSUER MCP_URL');
  process.exit(2);
}
const issuer = new URL(issuerArg);
const mcpUrl = new URL(mcpUrlArg);

// The tenant's authorization server metadata (RFC 8414), as an MCP client finds it.
const oauthMetadata = await discoverAuthorizationServerMetadata(issuer);
if (!oauthMetadata || oauthMetadata.issuer !== issuerArg) {
  console.error(`no authorization server metadata for ${issuer.href}`);
  process.exit(1);
}
const jwks = createRemoteJWKSet(new URL(oauthMetadata.jwks_uri));

const verifier = {
  async verifyAccessToken(token) {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks, {
        issuer: oauthMetadata.issuer,
        audience: mcpUrl.href,
        typ: 'at+jwt',
      }));
    } catch (e) {
      throw new InvalidTokenError(`the access token is not valid here: ${e.message}`);
    }
    return {
      token,
      clientId: payload.client_id,
      scopes: typeof payload.scope === 'string' ? payload.scope.split(' ') : [],
      expiresAt: payload.exp,
      resource: mcpUrl,
      extra: { sub: payload.sub },
    };
  },
};

function notesServer() {
  const server = new McpServer({ name: 'tessera-notes', version: '1.0.0' });
  server.registerTool(
    'list_notes',
    { title: 'List notes', description: "The signed-in user's notes", inputSchema: {} },
    async (_args, { authInfo }) => ({
      content: [
        {
          type: 'text',
          text: `2 notes for user ${authInfo.extra.sub} (client ${authInfo.clientId}, scopes ${authInfo.scopes.join(' ')}): "Buy milk", "Call Ada"`,
        },
      ],
    }),
  );
  return server;
}

const app = createMcpExpressApp({ host: mcpUrl.hostname });
// GET /.well-known/oauth-protected-resource<path>: this resource and its authorization server.
app.use(
  mcpAuthMetadataRouter({
    oauthMetadata,
    resourceServerUrl: mcpUrl,
    scopesSupported: [SCOPE],
    resourceName: 'Tessera notes (MCP)',
  }),
);
const auth = requireBearerAuth({
  verifier,
  requiredScopes: [SCOPE],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
  expectedResource: mcpUrl,
});

app.post(mcpUrl.pathname, auth, async (req, res) => {
  const server = notesServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (e) {
    console.error('MCP request failed:', e);
    if (!res.headersSent) {
      res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
    }
  }
});
// Stateless: no server-sent event stream, no session to end.
const notAllowed = (_req, res) => {
  res.status(405).set('allow', 'POST').json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
};
app.get(mcpUrl.pathname, auth, notAllowed);
app.delete(mcpUrl.pathname, auth, notAllowed);

app.listen(Number(mcpUrl.port || 80), mcpUrl.hostname, (error) => {
  if (error) {
    console.error(`cannot listen on ${mcpUrl.host}: ${error.message}`);
    process.exit(1);
  }
  console.log(`MCP server listening on ${mcpUrl.href} (authorization server ${oauthMetadata.issuer})`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
