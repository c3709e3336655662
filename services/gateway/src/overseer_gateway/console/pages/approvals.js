// The approvals inbox: every pending approval and reconciliation, live (a new card appears when the
// executor asks, no reload), decided with a comment; j/k move, a approves, r rejects. A question nobody
// answered in time is escalated to an admin: it comes first, marked, and an admin is told it is theirs.

import { get, live, refresher } from "../api.js";
import { approvalCard } from "../cards.js";
import { clear, h } from "../dom.js";

// A card just decided stays this long after the gateway's answer, showing what was recorded: the live
// stream may announce the decision, and the card leave the pending list, before the answer arrives.
const SHOWN_AFTER_DECISION_MS = 1500;

export async function render(root, app) {
  const list = h("div", { class: "inbox", "aria-label": "Pending decisions" });
  const count = h("span", { class: "count" });
  const escalations = h("p", { class: "notice escalated", id: "escalations", role: "status", hidden: true });
  root.append(h("section", { class: "approvals" },
    h("div", { class: "conversation-head" }, h("h2", {}, "Approvals ", count),
      h("p", { class: "muted keys" }, h("kbd", {}, "j"), "/", h("kbd", {}, "k"), " move · ",
        h("kbd", {}, "a"), " approve · ", h("kbd", {}, "r"), " reject")),
    escalations, list));

  if (!app.may("operator")) {
    list.append(h("p", { class: "empty" }, `The inbox is for operators; a ${app.me.role} token may not decide.`));
    return undefined;
  }
  const cards = new Map();
  const leaving = new Set();  // cards decided here, shown until SHOWN_AFTER_DECISION_MS after the answer
  let focused = 0;

  function cardsShown() {
    return [...list.querySelectorAll("article.approval")];
  }

  function focusCard(index) {
    const shown = cardsShown();
    if (!shown.length) return;
    focused = Math.max(0, Math.min(index, shown.length - 1));
    shown.forEach((card, i) => card.classList.toggle("focused", i === focused));
    shown[focused].focus();
  }

  async function refresh() {
    let items;
    try {
      items = await get("/v1/approvals?status=pending");
    } catch (error) {
      clear(list).append(h("p", { class: "empty" }, error.message));
      return;
    }
    // an escalation changes the card, so it is part of the card's key
    const keyOf = (item) => `${item.execution_id}:${item.args_hash}:${Boolean(item.escalated)}`;
    const keep = new Set(items.map(keyOf));
    const staying = (card) => card.dataset.deciding || leaving.has(card);
    for (const [key, card] of cards) if (!keep.has(key) && !staying(card)) cards.delete(key);
    const escalated = items.filter((item) => item.escalated).length;
    escalations.hidden = !escalated;
    escalations.textContent = !escalated ? ""
      : app.me.role === "admin" ? `${escalated} escalated to you: nobody answered in time, so an admin decides. They come first.`
      : `${escalated} escalated to an admin: nobody answered in time. You may still decide.`;
    const decided = [...cards].filter(([key]) => !keep.has(key)).map(([, card]) => card);
    const shown = decided.concat(items.map((item) => {
      const key = keyOf(item);
      if (!cards.has(key)) {
        const card = approvalCard(item, app, () => decidedHere(card));
        cards.set(key, card);
      }
      return cards.get(key);
    }));
    count.textContent = String(items.length);
    const badge = document.getElementById("pending-count");
    badge.textContent = String(items.length);
    badge.hidden = !items.length;
    if (!shown.length) {
      clear(list).append(h("div", { class: "empty" }, h("p", {}, "Nothing waits for you."),
        h("p", { class: "muted" }, "Held actions appear here as soon as the firewall holds them.")));
      return;
    }
    const active = document.activeElement;
    clear(list).append(...shown);
    shown.forEach((card, i) => card.classList.toggle("focused", i === focused));
    if (active && list.contains(active)) active.focus();
  }

  const refreshes = refresher(refresh);
  const schedule = refreshes.soon;

  function decidedHere(card) {
    leaving.add(card);
    schedule();
    setTimeout(() => { leaving.delete(card); schedule(); }, SHOWN_AFTER_DECISION_MS);
  }

  function onKey(event) {
    if (event.target.closest?.("input, textarea, select") || event.metaKey || event.ctrlKey || event.altKey) return;
    const shown = cardsShown();
    if (event.key === "j") focusCard(focused + 1);
    else if (event.key === "k") focusCard(focused - 1);
    else if ((event.key === "a" || event.key === "r") && shown[focused]) {
      const kind = shown[focused].dataset.kind;
      const decision = event.key === "a" ? (kind === "reconciliation" ? "completed" : "approve")
        : (kind === "reconciliation" ? "failed" : "reject");
      shown[focused].decide(decision);
    } else return;
    event.preventDefault();
  }
  document.addEventListener("keydown", onKey);
  // a card focused by Tab or a click is the one the keys act on
  list.addEventListener("focusin", (event) => {
    const card = event.target.closest?.("article.approval");
    const index = cardsShown().indexOf(card);
    if (index >= 0 && index !== focused) {
      focused = index;
      cardsShown().forEach((shown, i) => shown.classList.toggle("focused", i === focused));
    }
  });

  const stream = live({
    subjects: "ecs.requested,human.responded,execution.transitioned,firewall.approval_escalated",
    onState: (s) => { if (s === "open") schedule(); },
    onEvent: () => schedule(),
  });
  await refreshes.now();
  return () => { stream.close(); document.removeEventListener("keydown", onKey); refreshes.stop(); };
}
