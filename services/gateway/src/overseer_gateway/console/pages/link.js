// An approval link, opened from a notice (a mail, a chat message): the decision it stands for and
// the card it decides, then one confirming click. The link is its own credential, so no sign-in;
// opening the page decides nothing (a link preview or a mail scanner fetching it changes nothing).

import { api } from "../api.js";
import { preview } from "../cards.js";
import { h, when } from "../dom.js";

const LABELS = { approve: "Approve", reject: "Reject", completed: "It completed", failed: "It failed" };
const STATES = {
  used: "This link has decided already: each link decides once.",
  closed: "This call no longer waits for this decision: it was decided another way, or it ended.",
};

function refused(root, message) {
  root.append(h("article", { class: "card link refused", dataset: { state: "refused" } },
    h("h1", {}, "This approval link does not work"),
    h("p", { class: "status error", role: "status" }, message),
    h("p", { class: "muted" }, "Sign in to the console to see what waits for a decision.")));
}

export async function render(root, _app, [token]) {
  const path = `/v1/links/${encodeURIComponent(token ?? "")}`;
  let view;
  try {
    view = await api("GET", path);
  } catch (error) {
    refused(root, error.message);
    return;
  }
  const card = view.card ?? {};
  const label = LABELS[view.decision] ?? view.decision;
  const status = h("p", { class: "status", role: "status" }, STATES[view.state] ?? "");
  const comment = h("input", { type: "text", class: "comment", placeholder: "comment (optional)",
    "aria-label": "comment", maxlength: 2000 });
  const style = view.decision === "approve" || view.decision === "completed" ? "ok" : "danger";
  const confirm = h("button", { type: "button", class: `${style} confirm`, dataset: { decision: view.decision },
    onclick: async () => {
      confirm.disabled = true;
      try {
        const body = comment.value.trim() ? { comment: comment.value.trim() } : {};
        const answer = await api("POST", path, body);
        status.textContent = `${label}: recorded as ${answer.decided_by.kind}:${answer.decided_by.id}.`;
        status.classList.remove("error");
        article.dataset.decided = view.decision;
        article.dataset.state = "used";
      } catch (error) {
        status.textContent = error.message;
        status.classList.add("error");
      }
    } }, `Confirm: ${label}`);
  const open = view.state === "open";
  confirm.disabled = !open;
  const article = h("article", { class: "card approval held link", dataset: { state: view.state,
    execution: view.execution_id } },
    h("header", {},
      h("span", { class: "pill held" }, "approval link"),
      h("strong", { class: "tool" }, card.tool ?? "?"),
      card.level ? h("span", { class: "pill" }, card.level) : null,
      card.requested_by ? h("span", { class: "muted" }, `by ${card.requested_by}`) : null,
      card.requested_at ? h("span", { class: "muted" }, when(card.requested_at)) : null),
    h("p", {}, "You decide as ", h("strong", {}, view.approver), ` (through ${view.channel}): `,
      h("strong", { class: "decision" }, label), ". The link works once, until ", when(view.expires_at), "."),
    card.message ? h("p", { class: "message" }, card.message) : null,
    preview(card),
    h("details", { class: "args", open: !card.preview }, h("summary", {}, "Arguments"),
      h("pre", {}, JSON.stringify(card.args ?? {}, null, 2))),
    h("p", { class: "hash" }, "Decision bound to ", h("code", { title: "args_hash" }, view.args_hash)),
    open ? h("div", { class: "decide" }, comment, confirm) : null,
    status);
  root.append(article);
}
