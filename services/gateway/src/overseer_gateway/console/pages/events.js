// Live events: the stream from /v1/ws, filtered by subject pattern and session, newest at the top (what
// just happened is what people look for). Pause closes the stream and resume reopens it with
// `since=<last seq>`, so a pause loses nothing and holds no unbounded buffer; a dropped connection
// reconnects the same way, and the page says from which seq it caught up.

import { live } from "../api.js";
import { clear, h, when } from "../dom.js";

const MAX_ROWS = 500;  // older rows are dropped from the page (the stream keeps them: filter with since)

/** One line about an event's data: its first few scalar fields. */
export function summary(event) {
  const data = event?.data ?? {};
  const parts = [];
  for (const [key, value] of Object.entries(data)) {
    if (value === null || value === undefined || typeof value === "object") continue;
    if (key === "session_id" || key.endsWith("hash")) continue;  // the session has its column; hashes are noise
    parts.push(`${key}=${String(value)}`);
    if (parts.length >= 5) break;
  }
  const line = parts.join(" · ");
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

function row(frame) {
  const event = frame.event ?? {};
  return h("details", { class: "event-row", dataset: { seq: frame.seq, type: frame.type ?? "",
    session: event.correlation_id ?? "", aggregate: event.aggregate_id ?? "" } },
    h("summary", {},
      h("span", { class: "seq" }, `#${frame.seq}`),
      h("span", { class: "at muted" }, when(event.occurred_at)),
      h("code", { class: "type", title: frame.subject }, frame.type ?? frame.subject),
      h("span", { class: "session muted", title: "session (correlation id)" }, event.correlation_id ?? ""),
      h("span", { class: "line" }, summary(event))),
    h("pre", {}, JSON.stringify(frame, null, 2)));
}

export async function render(root, app, params) {
  const subjects = h("input", { id: "event-subjects", type: "text", value: "",
    placeholder: "e.g. execution.*, firewall.>", "aria-label": "subject patterns" });
  const session = h("input", { id: "event-session", type: "text", value: params[0] ?? "",
    placeholder: "session id (optional)", "aria-label": "session" });
  const state = h("span", { id: "event-state", class: "pill", role: "status" }, "connecting");
  const note = h("p", { id: "event-note", class: "muted", role: "status" });
  const pause = h("button", { type: "button", id: "event-pause" }, "Pause");
  const list = h("div", { id: "event-list", class: "event-list", "aria-live": "polite" });
  const empty = h("p", { class: "empty" }, "Waiting for events… (only new ones are shown; cause one and it appears here)");
  list.append(empty);

  let stream = null;
  let paused = false;
  let dropped = false;

  function add(frame) {
    empty.remove();
    list.prepend(row(frame));
    while (list.childElementCount > MAX_ROWS) list.lastElementChild.remove();
  }

  function onState(next) {
    if (next === "reconnecting") {
      dropped = true;
      state.textContent = "reconnecting";
      state.className = "pill held";
    } else if (next === "open") {
      state.textContent = "live";
      state.className = "pill allowed";
      if (dropped && stream?.last !== null && stream?.last !== undefined) {
        note.textContent = `Reconnected, caught up from seq ${stream.last}.`;
        note.dataset.since = String(stream.last);
      }
      dropped = false;
    }
  }

  function start(since) {
    stream?.close();
    state.textContent = "connecting";
    state.className = "pill";
    stream = live({ subjects: subjects.value.trim() || undefined, session: session.value.trim() || undefined,
      since, onEvent: add, onState });
  }

  function togglePause() {
    if (!paused) {
      const last = stream?.last ?? null;
      stream?.close();
      stream = { close() {}, last };
      paused = true;
      pause.textContent = "Resume";
      state.textContent = "paused";
      state.className = "pill held";
      note.textContent = last === null ? "Paused." : `Paused after seq ${last}; resuming catches up from there.`;
    } else {
      paused = false;
      pause.textContent = "Pause";
      const last = stream?.last ?? null;
      start(last ?? undefined);
      if (last !== null) note.textContent = `Resumed, caught up from seq ${last}.`;
    }
  }

  const form = h("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    clear(list).append(empty);
    note.textContent = "";
    paused = false;
    pause.textContent = "Pause";
    start(undefined);
  } },
    h("label", { for: "event-subjects" }, "Subjects"), subjects,
    h("label", { for: "event-session" }, "Session"), session,
    h("button", { type: "submit", class: "primary" }, "Apply"), pause);
  pause.addEventListener("click", togglePause);

  root.append(h("section", { class: "events" },
    h("div", { class: "conversation-head" }, h("h2", {}, "Live events"), state),
    form, note, list));
  start(undefined);
  return () => stream?.close();
}
