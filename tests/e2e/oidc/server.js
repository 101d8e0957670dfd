// A local OpenID Connect provider for the sign-in tests (tests/e2e/test_auth.py), never used by the app.
// `node server.js` with PORT (its port on 127.0.0.1), REDIRECT_URI (the app's /oauth2callback),
// CLIENT_ID and CLIENT_SECRET in the environment. Two accounts (USERS below); its own sign-in page
// (a wrong password is refused with a message), consent given at once, and sign-out without a question.
// Prints "ready <issuer>" when it listens.
import http from "node:http";
import Provider from "oidc-provider";

const PORT = Number(process.env.PORT);
const ISSUER = `http://127.0.0.1:${PORT}`;
const REDIRECT = process.env.REDIRECT_URI;

const USERS = {
  "ana@example.org": { password: "ana-secret", name: "Ana Operator" },
  "bo@example.org": { password: "bo-secret", name: "Bo Member" },
};

const provider = new Provider(ISSUER, {
  clients: [{
    client_id: process.env.CLIENT_ID,
    client_secret: process.env.CLIENT_SECRET,
    redirect_uris: [REDIRECT],
    post_logout_redirect_uris: [REDIRECT],
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  }],
  // st.user is built from the ID token alone: put email and name in it
  conformIdTokenClaims: false,
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
  async findAccount(ctx, id) {
    if (!USERS[id]) return undefined;
    return { accountId: id, async claims() { return { sub: id, email: id, email_verified: true, name: USERS[id].name }; } };
  },
  cookies: { keys: ["a test provider's cookie key, not a secret"] },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      // the default asks "Do you want to sign out?": sign out at once
      async logoutSource(ctx, form) {
        ctx.body = `<!DOCTYPE html><html><head><title>Signing out</title></head><body>${form}
<button id="yes" type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>
<script>document.getElementById("yes").click();</script></body></html>`;
      },
    },
  },
});

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res, uid, message) {
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
  res.end(`<!DOCTYPE html><html><head><title>Test provider: sign in</title></head><body>
<h1>Test identity provider</h1>${message ? `<p id="error" role="alert">${esc(message)}</p>` : ""}
<form method="post" action="/interaction/${esc(uid)}/login">
<label>E-mail <input name="email" autocomplete="off"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Continue</button></form></body></html>`);
}

async function body(req) {
  let text = "";
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === "login") {
    if (action !== "login") return page(res, uid, "");
    const form = await body(req);
    const email = (form.get("email") || "").trim().toLowerCase();
    const user = USERS[email];
    if (!user || user.password !== form.get("password")) return page(res, uid, "Wrong e-mail or password.");
    return provider.interactionFinished(req, res, { login: { accountId: email } }, { mergeWithLastSubmission: false });
  }
  // consent: granted at once (a test client)
  const grant = details.grantId ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
const server = http.createServer(async (req, res) => {
  const m = /^\/interaction\/([^/?]+)(?:\/(login))?(?:\?.*)?$/.exec(req.url);
  if (!m) return callback(req, res);
  try {
    await interaction(req, res, m[1], req.method === "POST" ? m[2] : undefined);
  } catch (err) {
    res.writeHead(400, { "content-type": "text/plain" });
    res.end(`interaction failed: ${err.message}`);
  }
});
server.listen(PORT, "127.0.0.1", () => console.log(`ready ${ISSUER}`));
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => server.close(() => process.exit(0)));
