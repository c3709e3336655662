// The console's shell: sign-in, the role, the hash router. Each page is a module under pages/
// exporting `render(root, app)`; it may return a function that cleans up (closes its streams).

import { ApiError, get, setToken, token } from "./api.js";
import { clear, h } from "./dom.js";

const PAGES = {
  chat: () => import("./pages/chat.js"),
  approvals: () => import("./pages/approvals.js"),
  events: () => import("./pages/events.js"),
  sessions: () => import("./pages/sessions.js"),
  executions: () => import("./pages/sessions.js"),
  audit: () => import("./pages/audit.js"),
  cos: () => import("./pages/cos.js"),
  policy: () => import("./pages/policy.js"),
  agents: () => import("./pages/agents.js"),
};

const app = {
  me: null,
  /** Whether the signed-in role may call an endpoint that needs `role` (the server checks anyway). */
  may(role) {
    const held = this.me?.role;
    if (!held) return false;
    if (held === "admin" || role === "viewer") return true;
    return held === role;
  },
  notify(message, kind = "error") {
    const notice = document.getElementById("notice");
    notice.textContent = message;
    notice.className = `notice ${kind}`;
    notice.hidden = !message;
    if (message && kind !== "error") setTimeout(() => { if (notice.textContent === message) notice.hidden = true; }, 4000);
  },
  fail(error) {
    app.notify(error instanceof ApiError ? error.message : String(error));
  },
};

let cleanup = null;

function signIn(root) {
  const input = h("input", { id: "token", type: "password", name: "token", autocomplete: "off", required: true,
    placeholder: "paste a token from .overseer/tokens.json" });
  const form = h("form", { class: "signin card", onsubmit: async (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    if (await identify()) route();
  } },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste a token from ", h("code", {}, "OVERSEER_HOME/tokens.json"),
      " (", h("code", {}, ".overseer/tokens.json"), " after ", h("code", {}, "make run"), ")."),
    h("label", { for: "token" }, "Token"),
    input,
    h("button", { type: "submit", class: "primary" }, "Sign in"));
  root.append(form);
  input.focus();
}

async function identify() {
  if (!token()) return false;
  try {
    app.me = await get("/v1/me");
    app.notify("");
  } catch (error) {
    app.me = null;
    if (error.status === 401) setToken(null);
    app.fail(error);
    return false;
  }
  document.getElementById("who-name").textContent = app.me.name;
  const role = document.getElementById("who-role");
  role.textContent = app.me.role;
  role.dataset.role = app.me.role;
  document.getElementById("who").hidden = false;
  document.getElementById("nav").hidden = false;
  return true;
}

let generation = 0;

async function route() {
  const mine = ++generation;  // a newer route (hashchange, sign-in) supersedes this one
  cleanup?.();
  cleanup = null;
  const root = clear(document.getElementById("view"));
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  if (name === "link") {  // an approval link is its own credential: no sign-in
    const module = await import("./pages/link.js");
    if (mine === generation) await module.render(root, app, rest.map(decodeURIComponent));
    return;
  }
  if (!app.me) {
    document.getElementById("nav").hidden = true;
    document.getElementById("who").hidden = true;
    signIn(root);
    return;
  }
  const page = PAGES[name] ? name : "chat";
  for (const link of document.querySelectorAll("#nav a")) {
    link.toggleAttribute("aria-current", link.dataset.page === page);
  }
  const module = await PAGES[page]();
  if (mine !== generation) return;
  clear(root);
  const done = (await module.render(root, app, rest.map(decodeURIComponent))) ?? null;
  if (mine !== generation) done?.();
  else cleanup = done;
}

document.getElementById("sign-out").addEventListener("click", () => {
  setToken(null);
  app.me = null;
  route();
});
window.addEventListener("hashchange", route);
await identify();
route();
