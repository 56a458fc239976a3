import assert from "node:assert/strict";
import {
  checkAccess,
  newToken,
  ownOrigin,
  sameSecret,
} from "../../src/web/access.ts";

const RULES = { token: newToken(), host: "127.0.0.1:8765" };
const ORIGIN = "http://127.0.0.1:8765";

function request(
  path: string,
  headers: Record<string, string> = {},
): Request {
  return new Request(`http://127.0.0.1:8765${path}`, {
    headers: { host: RULES.host, ...headers },
  });
}

const upgrade = { upgrade: "websocket", connection: "Upgrade" };

Deno.test("tokens are 256 random bits in URL-safe base64", () => {
  const tokens = new Set(Array.from({ length: 100 }, () => newToken()));
  assert.equal(tokens.size, 100);
  for (const token of tokens) assert.match(token, /^[A-Za-z0-9_-]{43}$/);
});

Deno.test("sameSecret is plain equality over the whole token", () => {
  const token = newToken();
  assert.ok(sameSecret(token, token));
  assert.ok(!sameSecret(token.slice(0, -1), token));
  assert.ok(!sameSecret(token + "x", token));
  assert.ok(!sameSecret("", token));
  const flipped = (token[0] === "A" ? "B" : "A") + token.slice(1);
  assert.ok(!sameSecret(flipped, token));
});

Deno.test("the page, its files and the socket pass with the token, the Host and no or the own Origin", () => {
  assert.equal(ownOrigin(RULES), ORIGIN);
  assert.deepEqual(checkAccess(request(`/${RULES.token}/`), RULES), {
    ok: true,
    path: "/",
    websocket: false,
  });
  assert.deepEqual(
    checkAccess(request(`/${RULES.token}/app.js`, { origin: ORIGIN }), RULES),
    { ok: true, path: "/app.js", websocket: false },
  );
  assert.deepEqual(checkAccess(request(`/${RULES.token}`), RULES), {
    ok: true,
    path: "",
    websocket: false,
  });
  assert.deepEqual(
    checkAccess(
      request(`/${RULES.token}/ws`, { ...upgrade, origin: ORIGIN }),
      RULES,
    ),
    { ok: true, path: "/ws", websocket: true },
  );
});

Deno.test("a missing or wrong token is refused, wherever it is looked for", () => {
  const wrong = newToken();
  for (
    const path of [
      "/",
      "/app.js",
      "/ws",
      `/${wrong}/`,
      `/${RULES.token.slice(0, 20)}/`,
      `/x/${RULES.token}/`,
      `/?token=${RULES.token}`,
    ]
  ) {
    assert.deepEqual(checkAccess(request(path), RULES), {
      ok: false,
      refusal: "token",
    }, path);
  }
});

Deno.test("a Host other than the canvas's own address is refused, even with the token", () => {
  for (
    const host of [
      "localhost:8765",
      "evil.example:8765",
      "127.0.0.1",
      "127.0.0.1:8766",
      "[::1]:8765",
      "",
    ]
  ) {
    const req = new Request(`http://127.0.0.1:8765/${RULES.token}/`, {
      headers: { host },
    });
    assert.deepEqual(checkAccess(req, RULES), {
      ok: false,
      refusal: "host",
    }, host);
  }
});

Deno.test("a foreign Origin is refused; a WebSocket without one is refused too", () => {
  for (
    const origin of [
      "http://evil.example",
      "http://localhost:8765",
      "https://127.0.0.1:8765",
      "http://127.0.0.1:8766",
      "null",
    ]
  ) {
    assert.deepEqual(
      checkAccess(request(`/${RULES.token}/`, { origin }), RULES),
      { ok: false, refusal: "origin" },
      origin,
    );
    assert.deepEqual(
      checkAccess(request(`/${RULES.token}/ws`, { ...upgrade, origin }), RULES),
      { ok: false, refusal: "origin" },
      origin,
    );
  }
  assert.deepEqual(
    checkAccess(request(`/${RULES.token}/ws`, upgrade), RULES),
    { ok: false, refusal: "origin" },
  );
});
