// The approval card, the same in the chat and in the inbox: what would run (tool, arguments, the
// firewall's preview), the hash the decision is bound to, and the buttons to decide.

import { post } from "./api.js";
import { h, when } from "./dom.js";

function diffLines(text) {
  return text.split("\n").map((line) => {
    const kind = line.startsWith("+") && !line.startsWith("+++") ? "add"
      : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
    return h("span", { class: `line ${kind}` }, line, "\n");
  });
}

/** The firewall's preview: the rendered mail, the diff, the command, or the plain arguments. */
export function preview(item) {
  const view = item.preview;
  if (!view || typeof view !== "object") return null;
  switch (view.kind) {
    case "email":
      return h("div", { class: "preview" }, h("div", { class: "label" }, "The mail as it will be sent"),
        h("pre", { class: "mail" }, view.rendered ?? ""));
    case "diff":
      return h("div", { class: "preview" }, h("div", { class: "label" }, `Changes to ${view.path}`),
        h("pre", { class: "diff" }, diffLines(view.diff ?? "")));
    case "shell":
      return h("div", { class: "preview" }, h("div", { class: "label" }, `Command (in ${view.cwd})`),
        h("pre", { class: "shell" }, `$ ${view.command}`));
    default:
      return view.summary ? h("div", { class: "preview" }, h("p", {}, view.summary)) : null;
  }
}

const DECISIONS = {
  approval: [["approve", "Approve", "ok"], ["reject", "Reject", "danger"]],
  reconciliation: [["completed", "It completed", "ok"], ["failed", "It failed", "danger"]],
};

/**
 * A card for one open question (`kind` approval or reconciliation). `onDecided(answer)` after the
 * gateway recorded a decision; while a decision is on its way the card is marked `data-deciding`.
 * Without the operator role the card shows no buttons.
 */
export function approvalCard(item, app, onDecided) {
  const kind = item.kind === "reconciliation" ? "reconciliation" : "approval";
  const comment = h("input", { type: "text", class: "comment", placeholder: "comment (optional)",
    "aria-label": "comment", maxlength: 2000 });
  const status = h("p", { class: "status", role: "status" });

  async function decide(decision, buttons) {
    for (const button of buttons) button.disabled = true;
    card.dataset.deciding = "true";
    try {
      const body = { decision, args_hash: item.args_hash };
      if (comment.value.trim()) body.comment = comment.value.trim();
      const answer = await post(`/v1/approvals/${encodeURIComponent(item.execution_id)}`, body);
      status.textContent = `${decision} recorded`;
      card.dataset.decided = decision;
      onDecided?.(answer);
    } catch (error) {
      status.textContent = error.message;
      status.classList.add("error");
      for (const button of buttons) button.disabled = false;
    } finally {
      delete card.dataset.deciding;
    }
  }

  const buttons = [];
  if (app.may("operator")) {
    for (const [decision, label, style] of DECISIONS[kind]) {
      buttons.push(h("button", { type: "button", class: style, dataset: { decision },
        onclick: () => decide(decision, buttons) }, label));
    }
  }
  const args = JSON.stringify(item.args ?? {}, null, 2);
  const card = h("article", { class: `card approval held ${kind}${item.escalated ? " escalated" : ""}`, tabindex: 0,
    dataset: { execution: item.execution_id, kind, escalated: String(Boolean(item.escalated)) } },
    h("header", {},
      h("span", { class: "pill held" }, kind === "approval" ? "held for approval" : "outcome unknown"),
      item.escalated ? h("span", { class: "pill escalated", title: "nobody answered in time: an admin decides" },
        "escalated to admin") : null,
      h("strong", { class: "tool" }, item.tool ?? "?"),
      item.level ? h("span", { class: "pill" }, item.level) : null,
      item.requested_by ? h("span", { class: "muted" }, `by ${item.requested_by}`) : null,
      item.requested_at ? h("span", { class: "muted" }, when(item.requested_at)) : null),
    item.message ? h("p", { class: "message" }, item.message) : null,
    preview(item),
    h("details", { class: "args", open: !item.preview }, h("summary", {}, "Arguments"), h("pre", {}, args)),
    h("p", { class: "hash" }, "Decision bound to ", h("code", { title: "args_hash" }, item.args_hash)),
    buttons.length ? h("div", { class: "decide" }, comment, buttons)
      : h("p", { class: "muted readonly" }, "Your role may view this card, not decide it."),
    status);
  card.decide = (decision) => {
    const button = buttons.find((b) => b.dataset.decision === decision);
    if (button && !button.disabled) button.click();
  };
  return card;
}
