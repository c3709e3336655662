// The operator's stops, shared by the Agents page (by id) and a session's timeline (its own buttons): the
// two-stage abort of a session (pause: its new proposals are held for a person; cancel, once paused:
// its pending and waiting executions are cancelled; resume) and cancelling one execution. Each asks for
// a confirmation first and shows what the service answered in `status`.

import { post } from "./api.js";

const enc = encodeURIComponent;

export const SESSION_STOPS = {
  pause: { label: "Pause", question: (id) => `Pause session ${id}? Its new proposals are held for a person.` },
  cancel: { label: "Cancel session", danger: true,
    question: (id) => `Cancel session ${id}? Its pending and waiting executions are cancelled.` },
  resume: { label: "Resume", question: (id) => `Resume session ${id}? New proposals are judged as usual again.` },
};

async function act(question, path, body, describe, status) {
  if (!window.confirm(question)) return null;
  try {
    const answer = await post(path, body);
    status.textContent = describe(answer);
    status.classList.remove("error");
    return answer;
  } catch (error) {
    status.textContent = error.message;
    status.classList.add("error");
    return null;
  }
}

/** `verb` (pause, cancel, resume) on session `id`, after a confirmation; the answer, or null. */
export function stopSession(verb, id, body, status) {
  return act(SESSION_STOPS[verb].question(id), `/v1/sessions/${enc(id)}/${verb}`, body,
    (a) => `session ${a.session_id}: ${a.paused ? "paused" : "running"}, aborts ${a.aborts}${a.changed ? "" : " (unchanged)"}`,
    status);
}

/** Cancel execution `id` (pending or waiting), after a confirmation; the answer, or null. */
export function cancelExecution(id, body, status) {
  return act(`Cancel execution ${id}?`, `/v1/executions/${enc(id)}/cancel`, body,
    (a) => `execution ${id}: ${a?.state ?? a?.status ?? "cancelled"}`, status);
}
