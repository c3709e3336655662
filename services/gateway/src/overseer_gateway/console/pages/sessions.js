// Sessions and executions: the agent's sessions (or any session id typed in, an external agent's too),
// a session's timeline (its executions and their transitions), one execution's snapshot, transitions
// and consequence view, and the execution state machine drawn with counts on its edges. A timeline follows
// the session live; on it an operator stops things in place: the session (pause, then cancel; resume)
// and each pending or waiting execution, each after a confirmation.
//   #/sessions            the list and a box to open any session id
//   #/sessions/<id>       the session's timeline
//   #/executions/<id>     one execution

import { ApiError, get, live } from "../api.js";
import { h, when } from "../dom.js";
import { cancelExecution, SESSION_STOPS, stopSession } from "../stops.js";
import { topologyDiagram } from "../topology.js";

const enc = encodeURIComponent;

const STATUS_PILL = {
  completed: "allowed", waiting: "held", running: "held", pending: "",
  failed: "denied", rejected: "denied", cancelled: "denied",
};

function statusPill(status) {
  return h("span", { class: `pill ${STATUS_PILL[status] ?? ""}`, dataset: { status } }, status);
}

function executionLink(id) {
  return h("a", { href: `#/executions/${enc(id)}`, dataset: { execution: id } }, h("code", {}, id));
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function ms(value) {
  if (value === null || value === undefined) return "—";
  return value >= 1000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}

/** A definition list of `fields` ([label, value]) from a view. */
function facts(fields) {
  return h("dl", { class: "facts" }, fields.flatMap(([label, value]) => [h("dt", {}, label),
    h("dd", {}, value === null || value === undefined || value === "" ? "—" : value)]));
}

function transitionsTable(transitions, withExecution) {
  if (!transitions.length) return h("p", { class: "muted" }, "No transitions yet.");
  return h("div", { class: "scroll" }, h("table", { class: "grid transitions" },
    h("thead", {}, h("tr", {}, withExecution ? h("th", {}, "execution") : null, h("th", {}, "#"),
      h("th", {}, "from → to"), h("th", {}, "trigger"), h("th", {}, "actor"), h("th", {}, "at"))),
    h("tbody", {}, transitions.map((t) => h("tr", {},
      withExecution ? h("td", {}, executionLink(t.execution_id)) : null,
      h("td", {}, String(t.sequence_number)),
      h("td", {}, statusPill(t.from_status), " → ", statusPill(t.to_status)),
      h("td", {}, h("code", {}, t.trigger)),
      h("td", {}, `${t.actor} (${t.actor_category})`),
      h("td", { class: "muted" }, when(t.timestamp)))))));
}

async function diagram(transitions, caption) {
  try {
    return topologyDiagram(await get("/api/execution/topology"), transitions, caption);
  } catch (error) {
    return h("p", { class: "status error" }, error.message);
  }
}

function openBox() {
  const input = h("input", { id: "session-id", type: "text", required: true, placeholder: "any session id",
    "aria-label": "session id" });
  return h("form", { class: "inline open-session", onsubmit: (event) => {
    event.preventDefault();
    if (input.value.trim()) location.hash = `#/sessions/${enc(input.value.trim())}`;
  } }, input, h("button", { type: "submit", class: "primary" }, "Open timeline"));
}

async function list(root) {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  root.append(h("section", { class: "views" },
    h("div", { class: "conversation-head" }, h("h2", {}, "Sessions"), openBox()),
    h("p", { class: "muted" }, "The agent's sessions; type any session id (an external agent's too) to see its timeline."),
    body));
  let sessions;
  try {
    sessions = await get("/v1/sessions");
  } catch (error) {
    body.replaceChildren(h("p", { class: "status error" }, error.message));
    return;
  }
  if (!sessions.length) {
    body.replaceChildren(h("p", { class: "empty" }, "The agent has no sessions yet."));
    return;
  }
  body.replaceChildren(h("ul", { class: "session-list" }, sessions.map((s) => h("li", {},
    h("a", { href: `#/sessions/${enc(s.session_id)}`, dataset: { session: s.session_id } },
      h("span", { class: "title" }, s.title || s.session_id),
      h("code", { class: "muted" }, s.session_id),
      h("span", { class: "pill" }, s.status ?? ""),
      h("span", { class: "muted" }, when(s.updated_at)))))));
}

const CANCELLABLE = new Set(["pending", "waiting"]);

/** The session's stop buttons and the status line they report to; `done` runs after a stop took effect. */
function sessionStops(sessionId, status, done) {
  return h("div", { class: "toolbar session-stops", "aria-label": "Stop this session" },
    Object.entries(SESSION_STOPS).map(([verb, stop]) => h("button", { type: "button", id: `session-${verb}`,
      class: stop.danger ? "danger" : null,
      onclick: async () => { if (await stopSession(verb, sessionId, {}, status)) done(); } }, stop.label)));
}

async function timeline(root, sessionId, app) {
  const status = h("p", { class: "status", role: "status", id: "session-stop-status" });
  const body = h("div", {});
  const operator = app.may("operator");
  const section = h("section", { class: "views" },
    h("div", { class: "conversation-head" },
      h("h2", {}, "Session ", h("code", {}, sessionId)),
      h("a", { href: `#/chat/${enc(sessionId)}` }, "chat"),
      h("a", { href: `#/events/${enc(sessionId)}` }, "live events"),
      openBox()),
    operator ? sessionStops(sessionId, status, () => load()) : null,
    operator ? status : null,
    body);
  root.append(section);

  function cancelButton(c) {
    if (!operator || !CANCELLABLE.has(c.current_status)) return null;
    return h("button", { type: "button", class: "danger small cancel-execution", dataset: { execution: c.execution_id },
      onclick: async () => { if (await cancelExecution(c.execution_id, {}, status)) load(); } }, "Cancel");
  }

  async function load() {
    let view;
    try {
      view = await get(`/api/execution/${enc(sessionId)}/timeline`);
    } catch (error) {
      const text = error instanceof ApiError && error.status === 404
        ? "No execution in this session (yet)." : error.message;
      body.replaceChildren(h("p", { class: "empty" }, text));
      return;
    }
    body.replaceChildren(...await timelineParts(view, cancelButton));
  }

  // Live: the observer announces each transition it has recorded (observation.execution_state), so a
  // timeline read after that announcement already shows the transition.
  let pending = null;
  const stream = live({
    session: sessionId,
    subjects: "observation.execution_state",
    onEvent: () => { if (!pending) pending = setTimeout(() => { pending = null; load(); }, 150); },
  });
  await load();
  return () => { stream.close(); clearTimeout(pending); };
}

async function timelineParts(view, cancelButton) {
  return [
    h("div", { class: "counts" },
      h("span", { class: "pill" }, plural(view.total_contracts, "execution")),
      h("span", { class: "pill allowed" }, `${view.terminal_contracts} ended`),
      h("span", { class: `pill ${view.active_contracts ? "held" : ""}` }, `${view.active_contracts} active`),
      view.has_suspended ? h("span", { class: "pill held" }, "one waits for a person") : null,
      view.has_irreversible_completed ? h("span", { class: "pill denied" }, "irreversible action completed") : null,
      h("span", { class: "muted" }, `${when(view.started_at)} → ${view.ended_at ? when(view.ended_at) : "going"}`)),
    h("h3", {}, "Executions"),
    h("div", { class: "scroll" }, h("table", { class: "grid contracts" },
      h("thead", {}, h("tr", {}, h("th", {}, "execution"), h("th", {}, "action"), h("th", {}, "status"),
        h("th", {}, "transitions"), h("th", {}, "in state since"), h("th", {}, ""))),
      h("tbody", {}, view.contracts.map((c) => h("tr", { dataset: { execution: c.execution_id } },
        h("td", {}, executionLink(c.execution_id)),
        h("td", {}, c.action_summary, c.irreversible ? h("span", { class: "pill denied" }, "irreversible") : null),
        h("td", {}, statusPill(c.current_status)),
        h("td", {}, String(c.transition_count)),
        h("td", { class: "muted" }, when(c.entered_at)),
        h("td", {}, cancelButton(c))))))),
    h("h3", {}, "State machine"),
    await diagram(view.transitions,
      `Counts: the ${plural(view.transitions.length, "transition")} of this session's ${plural(view.total_contracts, "execution")}.`),
    h("h3", {}, "Transitions"),
    transitionsTable(view.transitions, true)];
}

async function execution(root, executionId) {
  const section = h("section", { class: "views" },
    h("div", { class: "conversation-head" }, h("h2", {}, "Execution ", h("code", {}, executionId))));
  root.append(section);
  const ask = (path) => get(path).then((value) => ({ value }), (error) => ({ error }));
  const [snapshot, transitions, consequence] = await Promise.all([
    ask(`/api/execution/${enc(executionId)}/snapshot`),
    ask(`/v1/executions/${enc(executionId)}/transitions`),
    ask(`/v1/actions/${enc(executionId)}`),
  ]);
  if (snapshot.error) {
    section.append(h("p", { class: "empty" }, snapshot.error.message));
    return;
  }
  const s = snapshot.value;
  const c = consequence.value;
  section.append(
    h("div", { class: "two" },
      h("div", { class: "card snapshot" }, h("h3", {}, "Snapshot"), facts([
        ["action", s.action_summary], ["type", s.action_type], ["status", statusPill(s.current_status)],
        ["in this state", `${ms(s.duration_in_state_ms)} since ${when(s.entered_at)}`],
        ["irreversible", s.irreversible ? "yes" : "no"], ["side effects", s.has_side_effects ? "yes" : "no"],
        ["idempotency key", s.idempotency_key], ["timeout", s.timeout_seconds ? `${s.timeout_seconds} s` : null],
        ["last", s.last_trigger ? `${s.last_trigger} by ${s.last_actor}` : null],
        ["transitions", String(s.transition_count)], ["result", s.result], ["error", s.error_message],
      ])),
      h("div", { class: "card consequence" }, h("h3", {}, "Consequence"), c ? facts([
        ["label", h("span", { class: `pill ${c.consequence_label === "SUCCESS" ? "allowed"
          : c.is_still_pending ? "held" : "denied"}`, dataset: { label: c.consequence_label } }, c.consequence_label)],
        ["result", c.result], ["error", c.error_message],
        ["side effects", c.has_side_effects ? "yes" : "no"], ["was suspended", c.was_suspended ? "yes" : "no"],
        ["still pending", c.is_still_pending ? "yes" : "no"], ["total", ms(c.total_duration_ms)],
      ]) : h("p", { class: "status error" }, consequence.error?.message ?? ""))),
    h("h3", {}, "State machine"),
    await diagram(transitions.value ?? [], "Counts: this execution's transitions."),
    h("h3", {}, "Transitions"),
    transitions.error ? h("p", { class: "status error" }, transitions.error.message)
      : transitionsTable(transitions.value, false));
}

export async function render(root, app, params) {
  const kind = location.hash.replace(/^#\/?/, "").split("/")[0];
  if (kind === "executions" && params[0]) return execution(root, params[0]);
  if (params[0]) return timeline(root, params[0], app);
  return list(root);
}
