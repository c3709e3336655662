// Policy: the admin and user layers and the effective level per tool, the session path grants, and
// (admin) the admin layer as JSON to edit, with "Replay against history" to see which recorded
// proposals the candidate would judge differently before saving it. The firewall validates a save and
// its problems are shown as it words them.

import { get, post, put } from "../api.js";
import { h } from "../dom.js";
import { useStyles } from "./manage.js";

const level = (name) => (name ? h("span", { class: "level", dataset: { level: name } }, name) : h("span", { class: "muted" }, "—"));

function toolsTable(tools) {
  return h("div", { class: "scroll" }, h("table", { id: "policy-tools" },
    h("thead", {}, h("tr", {}, ["tool", "admin", "user", "effective", "rules"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, Object.entries(tools).map(([name, t]) => h("tr", { dataset: { tool: name } },
      h("td", {}, h("code", {}, name), t.irreversible ? h("span", { class: "muted" }, " irreversible") : null),
      h("td", {}, level(t.admin)), h("td", {}, level(t.user)),
      h("td", { class: "effective" }, level(t.effective)),
      h("td", { class: "muted" }, (t.rules ?? []).join(", ")))))));
}

/** MCP tools changed since an admin accepted them: held at CONFIRM or above until one accepts the change. */
function changedTools(unreviewed, app, onAccepted) {
  const names = Object.keys(unreviewed ?? {});
  if (!names.length) return h("p", { class: "muted", id: "policy-changed" }, "No tool changed since it was accepted.");
  return h("ul", { id: "policy-changed", class: "changed-tools" }, names.map((name) => {
    const status = h("span", { class: "status", role: "status" });
    const accept = app.may("admin") ? h("button", { type: "button", class: "ok", dataset: { tool: name }, onclick: async () => {
      accept.disabled = true;
      try {
        await post(`/v1/policy/tools/${encodeURIComponent(name)}/accept`, {});
        status.textContent = "accepted";
        onAccepted();
      } catch (error) {
        status.textContent = error.message;
        status.classList.add("error");
        accept.disabled = false;
      }
    } }, "Accept the change") : null;
    return h("li", { dataset: { tool: name } }, h("code", {}, name), ` — its ${unreviewed[name]} changed; its calls are held until an admin accepts. `, accept, status);
  }));
}

function grantsView(grants) {
  const entries = Array.isArray(grants) ? grants : Object.entries(grants ?? {});
  if (!entries.length) return h("p", { class: "muted", id: "policy-grants" }, "No session holds a path grant.");
  return h("pre", { id: "policy-grants" }, JSON.stringify(grants, null, 2));
}

function problemsOf(error) {
  const problems = error.problem?.problems;
  return Array.isArray(problems) && problems.length
    ? h("ul", { class: "problems" }, problems.map((p) => h("li", {}, typeof p === "string" ? p : JSON.stringify(p))))
    : h("p", { class: "problems" }, error.message);
}

function replayView(report) {
  const changed = report.changed ?? [];
  return h("div", { id: "replay-result", dataset: { changed: changed.length } },
    h("p", {}, `${report.evaluated} recorded proposals evaluated; `,
      h("strong", {}, changed.length ? `${changed.length} would get another verdict` : "no verdict would change"), "."),
    changed.length ? h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["execution", "tool", "before", "after", "why"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, changed.map((c) => h("tr", {},
        h("td", {}, h("a", { href: `#/executions/${encodeURIComponent(c.execution_id)}` }, h("code", {}, c.execution_id))),
        h("td", {}, h("code", {}, c.tool ?? "?")),
        h("td", {}, level(c.before.level), " ", c.before.decision),
        h("td", {}, level(c.after.level), " ", c.after.decision),
        h("td", { class: "muted" }, (c.reasons ?? []).join("; "))))))) : null);
}

function clearSection(root) {
  root.replaceChildren();
  return root;
}

export async function render(root, app) {
  useStyles();
  const section = h("section", { class: "manage policy" });
  root.append(section);
  section.append(h("h2", {}, "Policy"));
  let policy;
  try {
    policy = await get("/v1/policy");
  } catch (error) {
    section.append(h("p", { class: "status error" }, error.message));
    return undefined;
  }
  const { version: adminVersion, ...adminLayer } = policy.admin ?? {};
  section.append(
    h("p", { class: "muted" }, `Policy version ${policy.version}; admin layer v${adminVersion}, user layer v${policy.user?.version}.`),
    h("h3", {}, "Tools changed since accepted"),
    h("p", { class: "muted" }, "An MCP server changed how it describes these tools (the text a model reads, the arguments, or its hints)."),
    changedTools(policy.unreviewed, app, () => render(clearSection(root), app)),
    h("h3", {}, "Effective level per tool"),
    h("p", { class: "muted" }, "The stricter of the admin and the user layer."),
    toolsTable(policy.tools ?? {}),
    h("h3", {}, "User layer"),
    Object.keys(policy.user?.levels ?? {}).length
      ? h("pre", { id: "policy-user" }, JSON.stringify(policy.user.levels, null, 2))
      : h("p", { class: "muted", id: "policy-user" }, "The user has changed no level."),
    h("h3", {}, "Session path grants"),
    grantsView(policy.grants));

  if (!app.may("admin")) {
    section.append(h("h3", {}, "Admin layer"), h("pre", { id: "policy-admin" }, JSON.stringify(adminLayer, null, 2)),
      h("p", { class: "muted" }, `Editing the admin layer needs an admin token; this one is ${app.me.role}.`));
    return undefined;
  }
  const editor = h("textarea", { id: "policy-editor", class: "policy", spellcheck: "false", "aria-label": "admin layer (JSON)" },
    JSON.stringify(adminLayer, null, 2));
  const result = h("div", { id: "policy-result", role: "status" });

  function candidate() {
    try {
      return JSON.parse(editor.value);
    } catch (error) {
      result.replaceChildren(h("p", { class: "problems" }, `Not valid JSON: ${error.message}`));
      return null;
    }
  }
  async function replay() {
    const body = candidate();
    if (!body) return;
    result.replaceChildren(h("p", { class: "muted" }, "Replaying…"));
    try {
      result.replaceChildren(replayView(await post("/v1/policy/replay", body)));
    } catch (error) {
      result.replaceChildren(problemsOf(error));
    }
  }
  async function save() {
    const body = candidate();
    if (!body) return;
    if (!window.confirm("Replace the admin layer? Every new proposal is judged by it at once.")) return;
    try {
      const saved = await put("/v1/policy/admin", body);
      result.replaceChildren(h("p", {}, `Saved: policy version ${saved.version}.`));
      app.notify("Admin layer saved", "info");
    } catch (error) {
      result.replaceChildren(problemsOf(error));
    }
  }
  section.append(h("h3", {}, "Admin layer"),
    h("label", { for: "policy-editor" }, "The admin layer as JSON (see docs/firewall.md)"), editor,
    h("div", { class: "toolbar" },
      h("button", { type: "button", id: "policy-replay", onclick: replay }, "Replay against history"),
      h("button", { type: "button", id: "policy-save", class: "primary", onclick: save }, "Save")),
    result);
  return undefined;
}
