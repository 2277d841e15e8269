// A real OpenID provider (npm oidc-provider 9.x) for Quire's SSO tests.
//
//   node tests/oidc/provider.mjs config.json
//
// config.json: {"port": 8999, "issuer": "http://127.0.0.1:8999",
//               "clients": [client metadata...], "accounts": {username: claims},
//               "ttl": {AccessToken: 3600, ...},
//               "resources": ["http://127.0.0.1:8000/mcp"]}
// Only "clients" is required. "port" 0 (the default) takes a free port, and the
// issuer then defaults to http://127.0.0.1:<that port>: no race for a port
// between the tests that start providers in parallel.
//
// Prints "ready <issuer>" on stdout once listening. Test use only: it logs in any
// username with any password, grants every requested scope without a consent
// page and delivers back-channel logout to loopback addresses.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const accounts = config.accounts ?? {};
// Resource servers (RFC 8707) a client may ask an access token for: a JWT
// whose audience is the resource, as an MCP server (Quire's /mcp) wants it.
const resources = config.resources ?? [];

// Listen first, so the issuer can name the port the system picked.
const server = createServer();
server.on('error', (err) => {
  console.error(err);
  process.exit(1);
});
await new Promise((resolve) => { server.listen(config.port ?? 0, '127.0.0.1', resolve); });
const issuer = config.issuer ?? `http://127.0.0.1:${server.address().port}`;

// A fresh RS256 signing key per run: nothing outlives the test process.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }), kid: 'test-rs256', alg: 'RS256', use: 'sig',
};

// Claims are only released when some scope lists them (and they then show up in
// claims_supported), so every claim name used by an account goes under a scope:
// the email ones under "email", everything else (groups, realm_access...) under
// "profile".
const EMAIL_CLAIMS = ['email', 'email_verified'];
const PROFILE_CLAIMS = new Set([
  'name', 'family_name', 'given_name', 'middle_name', 'nickname', 'preferred_username',
  'profile', 'picture', 'website', 'gender', 'birthdate', 'zoneinfo', 'locale', 'updated_at',
]);
for (const claims of Object.values(accounts)) {
  for (const name of Object.keys(claims)) {
    if (name !== 'sub' && !EMAIL_CLAIMS.includes(name)) PROFILE_CLAIMS.add(name);
  }
}

// Plain pages without the default ones' Google Fonts @import, so an offline
// browser is never left waiting on it. Same form and buttons as the defaults.
const page = (title, body) => `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${title}</title></head>
<body><h1>${title}</h1>${body}</body></html>`;

const provider = new Provider(issuer, {
  clients: config.clients ?? [],
  jwks: { keys: [signingKey] },
  cookies: {
    keys: [randomBytes(32).toString('hex')],
    // Cookies ignore ports: on 127.0.0.1 the provider and the app under test
    // share one cookie jar, so keep clear of generic names like "_session".
    names: { session: 'op_session', interaction: 'op_interaction', resume: 'op_resume' },
  },

  // sub = the typed username; unknown usernames get no claims beyond sub.
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { ...(accounts[sub] ?? {}), sub };
      },
    };
  },

  claims: {
    openid: ['sub'],
    email: EMAIL_CLAIMS,
    profile: [...PROFILE_CLAIMS],
  },

  // Default (true) keeps scope-granted claims out of the ID token whenever an
  // access token is issued too (the code flow), leaving them to userinfo only.
  // Tests want them in both places.
  conformIdTokenClaims: false,

  // Auto-consent: grant whatever the client asks for, so the only interactive
  // step is the dev login form.
  async loadExistingGrant(ctx) {
    const { client, session } = ctx.oidc;
    const grantId = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(client.clientId);
    const grant = (grantId && await ctx.oidc.provider.Grant.find(grantId))
      || new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addOIDCScope([...ctx.oidc.requestParamOIDCScopes].join(' '));
    grant.addOIDCClaims([...ctx.oidc.requestParamClaims]);
    for (const [indicator, server] of Object.entries(ctx.oidc.resourceServers ?? {})) {
      grant.addResourceScope(indicator, server.scope);
    }
    await grant.save();
    return grant;
  },

  // v9 supports only S256; by default it only insists on PKCE for public
  // clients. Require it for every client, as Quire always sends it.
  pkce: { required: () => true },

  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: resources.length > 0,
      useGrantedResource: () => true,
      async getResourceServerInfo(ctx, indicator) {
        if (!resources.includes(indicator)) throw new errors.InvalidTarget();
        return { scope: 'mcp', audience: indicator, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
      },
    },
    backchannelLogout: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Logout Request', `${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm">No, stay signed in</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Sign-out Success', '<p>Your sign-out was successful.</p>');
      },
    },
  },

  // oidc-provider hands its own fetch a dispatcher that drops connections to
  // loopback/private addresses (SSRF guard). The tests' back-channel logout
  // receivers live on 127.0.0.1, so use the default dispatcher instead.
  fetch(url, options) {
    delete options.dispatcher;
    return globalThis.fetch(url, options);
  },

  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 600,
    IdToken: 3600,
    Interaction: 3600,
    Session: 86400,
    Grant: 86400,
    ...(config.ttl ?? {}),
  },

  // Error pages as JSON with the real reason, for readable test failures.
  async renderError(ctx, out, error) {
    ctx.type = 'json';
    ctx.body = out;
    console.error('render error:', error);
  },
});

for (const event of ['server_error', 'backchannel.error', 'grant.error', 'end_session.error',
  'authorization.error', 'userinfo.error']) {
  provider.on(event, (ctx, err) => console.error(`${event}:`, err ?? ctx));
}

server.on('request', provider.callback());
console.log(`ready ${issuer}`);

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  // Browsers hold keep-alive connections open; don't let them stall shutdown.
  server.closeAllConnections();
});
