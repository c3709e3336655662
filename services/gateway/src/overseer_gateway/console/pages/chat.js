// Chat with Overseer's own agent: the sessions, the dialogue, a message box, the turn followed live
// (each step as the agent thinking, the reply), approval cards and questions answered in place, and
// the cognitive trace folded under the reply.

import { get, live, post, refresher } from "../api.js";
import { approvalCard } from "../cards.js";
import { clear, h, when } from "../dom.js";

const STATUS = {
  thinking: "thinking…",
  waiting_for_tool: "running a tool…",
  waiting_for_human: "waiting for you",
  done: "done",
};

function newSessionId() {
  const stamp = new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return `web-${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

function traceView(trace) {
  if (!trace?.length) return null;
  const rows = trace.map((step) => h("li", {},
    h("code", {}, `${step.step}. ${step.node} → ${step.next}`),
    step.plan ? h("span", { class: "pill" }, step.plan) : null,
    step.tool ? h("span", { class: "pill" }, step.tool) : null,
    step.confidence != null ? h("span", { class: "muted" }, `confidence ${Number(step.confidence).toFixed(2)}`) : null,
    step.note ? h("span", { class: "muted" }, ` ${step.note}`) : null));
  return h("details", { class: "trace" }, h("summary", {}, `Cognitive trace (${trace.length} steps)`), h("ol", {}, rows));
}

function toolCalls(message) {
  return (message.tool_calls ?? []).map((call) => h("div", { class: "bubble call" },
    h("span", { class: "muted" }, "calls "), h("code", {}, call.function?.name ?? "?"), " ",
    h("code", { class: "muted" }, call.function?.arguments ?? "")));
}

function consequenceClass(text) {
  if (/\[SUCCESS/.test(text)) return "allowed";
  if (/\[(FAILED|DENIED|REJECTED)/.test(text)) return "denied";
  return "";
}

function dialogue(view) {
  const items = [];
  for (const message of view.history ?? []) {
    if (message.role === "user") items.push(h("div", { class: "bubble user" }, message.content ?? ""));
    else if (message.role === "assistant") {
      items.push(...toolCalls(message));
      if (message.content) {
        items.push(h("div", { class: `bubble agent reply ${consequenceClass(message.content)}` }, message.content));
      }
    } else if (message.role === "tool") {
      items.push(h("div", { class: `bubble tool ${consequenceClass(message.content ?? "")}` },
        h("span", { class: "muted" }, "tool result "), message.content ?? ""));
    }
  }
  return items;
}

function questionCard(view, app, onAnswered) {
  const question = view.hitl_request;
  const status = h("p", { class: "status", role: "status" });
  async function answer(text) {
    try {
      await post(`/v1/sessions/${encodeURIComponent(view.session_id)}/hitl/${encodeURIComponent(question.request_id)}`,
        { answer: text });
      status.textContent = "answered";
      onAnswered();
    } catch (error) {
      status.textContent = error.message;
      status.classList.add("error");
    }
  }
  const controls = [];
  if (app.may("operator")) {
    for (const option of question.options ?? []) {
      controls.push(h("button", { type: "button", class: "option", onclick: () => answer(option) }, option));
    }
    const input = h("input", { type: "text", "aria-label": "your answer",
      placeholder: question.options?.length ? "or type an answer" : "your answer" });
    controls.push(h("form", { class: "inline", onsubmit: (event) => {
      event.preventDefault();
      if (input.value.trim()) answer(input.value.trim());
    } }, input, h("button", { type: "submit" }, "Answer")));
  }
  return h("article", { class: "card question held", dataset: { request: question.request_id } },
    h("header", {}, h("span", { class: "pill held" }, `question: ${question.type}`)),
    h("p", { class: "message" }, question.msg),
    h("div", { class: "options" }, controls), status);
}

export async function render(root, app, [selected]) {
  let sessionId = selected || sessionStorage.getItem("overseer.session") || null;
  let stream = null;
  let shownStatus = null;
  const cards = new Map();

  const list = h("ul", { class: "sessions", "aria-label": "Sessions" });
  const thread = h("div", { class: "thread", "aria-live": "polite" });
  const thinking = h("div", { class: "thinking", role: "status" });
  // The reply as the model writes it, until the finished reply replaces it (a refresh redraws the thread).
  const writing = h("div", { class: "bubble agent reply writing", "aria-live": "polite" });
  const title = h("h2", {}, "New conversation");
  const state = h("span", { class: "pill" });
  const text = h("textarea", { id: "message", rows: 2, placeholder: "Say something to the agent… (Enter sends, Shift+Enter a new line)",
    "aria-label": "message" });
  const send = h("button", { type: "submit", class: "primary" }, "Send");
  const composer = h("form", { class: "composer", onsubmit: (event) => { event.preventDefault(); say(); } }, text, send);
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); say(); }
  });
  if (!app.may("operator")) { text.disabled = true; send.disabled = true; text.placeholder = "Your role may read, not talk."; }

  root.append(h("div", { class: "chat" },
    h("aside", { class: "side" },
      h("button", { type: "button", id: "new-session", onclick: () => open(newSessionId(), true) }, "+ New session"),
      list),
    h("section", { class: "conversation" },
      h("div", { class: "conversation-head" }, title, state, h("a", { id: "session-timeline", href: "#/sessions", onclick: (event) => { event.currentTarget.href = `#/sessions/${encodeURIComponent(sessionId)}`; } }, "timeline")),
      thread, thinking, composer)));

  async function loadSessions() {
    try {
      const sessions = await get("/v1/sessions?limit=50");
      clear(list).append(...sessions.map((s) => h("li", {},
        h("a", { href: `#/chat/${encodeURIComponent(s.session_id)}`, "aria-current": s.session_id === sessionId ? "true" : null },
          h("span", { class: "title" }, s.title || s.session_id),
          h("span", { class: `pill ${s.status === "waiting_for_human" ? "held" : ""}` }, STATUS[s.status] ?? s.status),
          h("span", { class: "muted" }, when(s.updated_at))))));
    } catch (error) { app.fail(error); }
  }

  async function refresh() {
    if (!sessionId) return;
    let view;
    try {
      view = await get(`/v1/sessions/${encodeURIComponent(sessionId)}`);
    } catch (error) {
      if (error.status === 404) { clear(thread).append(h("p", { class: "empty" }, "Nothing said yet. Start below.")); return; }
      app.fail(error);
      return;
    }
    title.textContent = view.title || sessionId;
    state.textContent = STATUS[view.status] ?? view.status;
    state.className = `pill ${view.status === "waiting_for_human" ? "held" : view.status === "done" ? "allowed" : ""}`;
    if (view.status !== "thinking" && view.status !== "waiting_for_tool") thinking.textContent = "";
    if (view.status !== shownStatus) { shownStatus = view.status; loadSessions(); }
    const items = dialogue(view);
    const trace = view.status === "done" ? traceView(view.trace) : null;
    if (trace) items.push(trace);
    if (view.approval) {
      const key = `${view.approval.execution_id}:${view.approval.args_hash}`;
      if (!cards.has(key)) cards.set(key, approvalCard({ ...view.approval, session_id: sessionId }, app, () => schedule()));
      items.push(cards.get(key));
    }
    if (view.hitl_request) {
      // the question is also the agent's last message: shown once, as the card
      const last = items[items.length - 1];
      if (last?.classList?.contains("agent") && last.textContent === view.hitl_request.msg) items.pop();
      const key = `q:${view.hitl_request.request_id}`;
      if (!cards.has(key)) cards.set(key, questionCard(view, app, () => schedule()));
      items.push(cards.get(key));
    }
    writing.textContent = "";
    clear(thread).append(...items);
    thread.scrollTop = thread.scrollHeight;
  }

  const refreshes = refresher(refresh);
  const schedule = refreshes.soon;

  function follow() {
    stream?.close();
    stream = live({
      session: sessionId,
      subjects: "agent.*,conversation.*,ecs.*,execution.*",
      onState: (s) => { if (s === "open") schedule(); },
      onEvent: (frame) => {
        if (frame.type === "agent.reply_delta") {  // the model's answer as it is written (no event)
          if (!writing.isConnected) thread.append(writing);
          writing.textContent += frame.delta ?? "";
          thread.scrollTop = thread.scrollHeight;
          return;
        }
        if (frame.type === "agent.step_taken") {
          const record = frame.event?.data?.record ?? {};
          thinking.textContent = `thinking: ${record.node ?? "step"}${record.note ? ` (${record.note})` : ""}`;
        } else if (frame.type === "conversation.replied") {
          thinking.textContent = "";
          loadSessions();
        }
        schedule();
      },
    });
  }

  function open(id, fresh = false) {
    sessionId = id;
    sessionStorage.setItem("overseer.session", id);
    cards.clear();
    clear(thread);
    thinking.textContent = "";
    title.textContent = fresh ? "New conversation" : id;
    state.textContent = "";
    if (fresh) thread.append(h("p", { class: "empty" }, "A new session. Ask the agent something, e.g. “send a meeting invite to bob@example.com”."));
    // Only while the chat is still the page shown: a render that a newer route superseded (the person
    // went elsewhere while the sessions loaded) must not pull the address back to the chat.
    const here = `#/chat/${encodeURIComponent(id)}`;
    if (/^(#\/?(chat(\/.*)?)?)?$/.test(location.hash) && location.hash !== here) history.replaceState(null, "", here);
    follow();
    text.focus();
  }

  async function say() {
    const message = text.value.trim();
    if (!message) return;
    if (!sessionId) open(newSessionId(), true);
    send.disabled = true;
    try {
      await post(`/v1/sessions/${encodeURIComponent(sessionId)}/messages`, { text: message });
      text.value = "";
      thinking.textContent = "thinking…";
      schedule();
      loadSessions();
    } catch (error) { app.fail(error); } finally { send.disabled = false; }
  }

  await loadSessions();
  // The person went elsewhere while the sessions loaded (a newer page took the view): this render
  // opens nothing, no stream least of all.
  if (!thread.isConnected) return undefined;
  if (sessionId) { open(sessionId); } else { open(newSessionId(), true); }
  return () => { stream?.close(); refreshes.stop(); };
}
