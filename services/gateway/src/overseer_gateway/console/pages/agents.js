// Agents: each agent's mode (supervised unless set), setting one (admin), the perception stats with
// their flags, and the operator's stops: the two-stage abort of a session (pause, then cancel; resume)
// and cancelling one execution, each after a confirmation.

import { get, put } from "../api.js";
import { h } from "../dom.js";
import { cancelExecution, SESSION_STOPS, stopSession } from "../stops.js";
import { useStyles } from "./manage.js";

const FAST_MS = 3000;     // an approval faster than this in a long streak: rubber-stamping?
const STREAK = 5;
const SLOW_MS = 120_000;  // a mean latency above this: the approvers hesitate over the tool

function grantText(grant) {
  if (!grant) return "—";
  const parts = [`tools: ${(grant.tools ?? []).join(", ")}`];
  if (grant.max_steps) parts.push(`${grant.max_steps} steps`);
  if (grant.seconds) parts.push(`${grant.seconds} s`);
  return parts.join(" · ");
}

function agentsTable(answer) {
  const agents = answer.agents ?? [];
  if (!agents.length) {
    return h("p", { id: "agents-list", class: "muted" },
      `No agent has a mode set: every agent is ${answer.default_mode ?? "supervised"} (each action judged by the policy).`);
  }
  return h("div", { class: "scroll" }, h("table", { id: "agents-list" },
    h("thead", {}, h("tr", {}, ["agent", "mode", "grant", "steps used"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, agents.map((a) => h("tr", { dataset: { principal: a.principal } },
      h("td", {}, h("code", {}, a.principal)), h("td", {}, h("span", { class: "pill" }, a.mode)),
      h("td", {}, grantText(a.grant)), h("td", {}, String(a.steps_used ?? 0)))))));
}

function modeForm(onSaved) {
  const principal = h("input", { id: "mode-principal", required: true, placeholder: "agent:overseer", maxlength: 200 });
  const mode = h("select", { id: "mode-mode" }, ["supervised", "delegated", "audited"].map((m) => h("option", { value: m }, m)));
  const tools = h("input", { id: "mode-tools", placeholder: "fs.read, fs.write (delegated)" });
  const steps = h("input", { id: "mode-steps", type: "number", min: 1, placeholder: "max steps" });
  const seconds = h("input", { id: "mode-seconds", type: "number", min: 1, placeholder: "seconds" });
  const status = h("p", { class: "status", role: "status" });
  const grant = h("fieldset", { hidden: true }, h("legend", {}, "Delegation grant"),
    h("label", { for: "mode-tools" }, "Tool whitelist (comma separated)"), tools,
    h("label", { for: "mode-steps" }, "Step budget"), steps,
    h("label", { for: "mode-seconds" }, "Time budget (seconds)"), seconds);
  mode.addEventListener("change", () => { grant.hidden = mode.value !== "delegated"; });
  return h("form", { id: "mode-form", onsubmit: async (event) => {
    event.preventDefault();
    const body = { mode: mode.value };
    if (mode.value === "delegated") {
      body.grant = { tools: tools.value.split(/[\s,]+/).filter(Boolean) };
      if (steps.value) body.grant.max_steps = Number(steps.value);
      if (seconds.value) body.grant.seconds = Number(seconds.value);
    }
    try {
      const answer = await put(`/v1/agents/${encodeURIComponent(principal.value.trim())}/mode`, body);
      status.textContent = `${principal.value.trim()} is ${mode.value}`;
      status.classList.remove("error");
      onSaved(answer);
    } catch (error) {
      status.textContent = error.message;
      status.classList.add("error");
    }
  } }, h("fieldset", {}, h("legend", {}, "Set a mode (admin)"),
    h("label", { for: "mode-principal" }, "Agent principal"), principal,
    h("label", { for: "mode-mode" }, "Mode"), mode, grant,
    h("div", {}, h("button", { type: "submit", class: "primary" }, "Set mode")), status));
}

function perceptionView(stats) {
  const tools = Object.entries(stats.tools ?? {});
  const approvers = Object.entries(stats.approvers ?? {});
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);
  const ms = (value) => (value === null || value === undefined ? "—" : `${(value / 1000).toFixed(1)} s`);
  return h("div", { id: "perception" },
    tools.length ? h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["tool", "approved", "rejected", "rate", "mean latency", "flags"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, tools.map(([name, t]) => h("tr", {},
        h("td", {}, h("code", {}, name)), h("td", {}, String(t.approvals)), h("td", {}, String(t.rejections)),
        h("td", {}, t.approval_rate === null || t.approval_rate === undefined ? "—" : `${Math.round(t.approval_rate * 100)} %`),
        h("td", {}, ms(t.mean_latency_ms)),
        h("td", { class: "flag" }, [
          t.mean_latency_ms > SLOW_MS ? "hesitation" : null,
          t.consecutive_rejections >= 3 ? `${t.consecutive_rejections} rejections in a row` : null,
        ].filter(Boolean).join(", "))))))) : h("p", { class: "muted" }, "No decision recorded yet."),
    approvers.length ? h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["approver", "approvals in a row", "mean latency of the streak", "flags"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, approvers.map(([name, a]) => {
        const streakMean = mean(a.streak_latencies_ms ?? []);
        const stamping = a.consecutive_approvals >= STREAK && streakMean !== null && streakMean < FAST_MS;
        return h("tr", {}, h("td", {}, h("code", {}, name)), h("td", {}, String(a.consecutive_approvals)),
          h("td", {}, ms(streakMean)), h("td", { class: "flag" }, stamping ? "rubber-stamping?" : ""));
      })))) : null,
    h("p", { class: "muted" }, `Flags: rubber-stamping? when ${STREAK} or more approvals in a row average under `
      + `${FAST_MS / 1000} s; hesitation when a tool's mean approval latency exceeds ${SLOW_MS / 1000} s.`));
}

function stopsForm() {
  const session = h("input", { id: "stop-session", placeholder: "session id", maxlength: 200 });
  const execution = h("input", { id: "stop-execution", placeholder: "execution id", maxlength: 200 });
  const reason = h("input", { id: "stop-reason", placeholder: "reason (optional)", maxlength: 2000 });
  const status = h("p", { class: "status", role: "status", id: "stop-status" });
  const body = () => (reason.value.trim() ? { reason: reason.value.trim() } : {});
  const sessionButton = (verb) => h("button", { type: "button", id: `stop-${verb}`,
    class: SESSION_STOPS[verb].danger ? "danger" : null, onclick: () => {
      const id = session.value.trim();
      if (!id) { status.textContent = "Give a session id."; return; }
      stopSession(verb, id, body(), status);
    } }, SESSION_STOPS[verb].label);
  return h("fieldset", { id: "stops" }, h("legend", {}, "Stop"),
    h("label", { for: "stop-session" }, "Session (pause first; cancel is the second stage)"), session,
    h("div", { class: "toolbar" }, sessionButton("pause"), sessionButton("cancel"), sessionButton("resume")),
    h("label", { for: "stop-execution" }, "One execution (pending or waiting)"), execution,
    h("div", { class: "toolbar" }, h("button", { type: "button", id: "stop-execution-cancel", class: "danger", onclick: () => {
      const id = execution.value.trim();
      if (!id) { status.textContent = "Give an execution id."; return; }
      cancelExecution(id, body(), status);
    } }, "Cancel execution")),
    h("label", { for: "stop-reason" }, "Reason"), reason, status);
}

export async function render(root, app) {
  useStyles();
  const section = h("section", { class: "manage agents" });
  root.append(section);
  section.append(h("h2", {}, "Agents"));
  const list = h("div", {});
  section.append(h("h3", {}, "Modes"), list);
  try {
    list.replaceChildren(agentsTable(await get("/v1/agents")));
  } catch (error) {
    list.replaceChildren(h("p", { class: "status error" }, error.message));
  }
  if (app.may("admin")) section.append(modeForm((answer) => list.replaceChildren(agentsTable(answer))));
  if (!app.may("operator")) {
    section.append(h("p", { class: "muted" }, `Perception stats and the stop controls are for operators; this token is ${app.me.role}.`));
    return undefined;
  }
  section.append(h("h3", {}, "Stop a session or an execution"), stopsForm());
  const perception = h("div", {});
  section.append(h("h3", {}, "Perception"), perception);
  try {
    perception.replaceChildren(perceptionView(await get("/v1/perception")));
  } catch (error) {
    perception.replaceChildren(h("p", { class: "status error" }, error.message));
  }
  return undefined;
}
