// Cognitive Objects: a board with a column per lifecycle state. Each card offers only the triggers
// legal from its status (the COL's own state machine, `GET /v1/cos/topology`), so an illegal move is
// never a button. Search with `q` (any language), create a CO, and decide the agent's suggestions. The
// board and the suggestions follow the COL live: what it records appears without a reload.

import { get, live, post } from "../api.js";
import { h } from "../dom.js";
import { useStyles } from "./manage.js";

const STATES = ["emerging", "active", "waiting", "blocked", "stable", "archived"];

function triggersFrom(topology) {
  const legal = new Map(STATES.map((state) => [state, []]));
  for (const edge of topology.edges ?? []) {
    legal.get(edge.from_status)?.push({ trigger: edge.trigger, to: edge.to_status });
  }
  return legal;
}

export async function render(root, app) {
  useStyles();
  const section = h("section", { class: "manage cos" });
  root.append(section);
  section.append(h("h2", {}, "Cognitive Objects"));
  const writer = app.may("operator");
  const status = h("p", { class: "status", role: "status", id: "cos-status" });
  const board = h("div", { class: "board", id: "co-board" });
  const query = h("input", { type: "search", id: "co-search", placeholder: "search title and description (any language)",
    "aria-label": "search Cognitive Objects" });
  let legal;
  try {
    legal = triggersFrom(await get("/v1/cos/topology"));
  } catch (error) {
    section.append(h("p", { class: "status error" }, error.message));
    return undefined;
  }

  async function move(co, trigger) {
    try {
      await post(`/v1/cos/${encodeURIComponent(co.co_id)}/transitions`, { trigger });
      status.textContent = `“${co.title}”: ${trigger}`;
      await load();
    } catch (error) {
      status.textContent = error.message;
    }
  }

  function card(co) {
    const moves = writer ? (legal.get(co.status) ?? []).map(({ trigger, to }) =>
      h("button", { type: "button", dataset: { trigger }, title: `${co.status} → ${to}`,
        onclick: () => move(co, trigger) }, trigger)) : [];
    return h("article", { class: "card co", dataset: { co: co.co_id, status: co.status } },
      h("strong", {}, co.title),
      h("div", {}, co.semantic_type ? h("span", { class: "pill" }, co.semantic_type) : null, " ",
        co.domain_tag ? h("span", { class: "pill" }, co.domain_tag) : null),
      co.description ? h("p", { class: "muted" }, co.description) : null,
      moves.length ? h("div", { class: "moves", role: "group", "aria-label": `move “${co.title}”` }, moves) : null);
  }

  async function load() {
    const params = new URLSearchParams({ limit: "500" });
    if (query.value.trim()) params.set("q", query.value.trim());
    let cos;
    try {
      cos = await get(`/v1/cos?${params}`);
    } catch (error) {
      status.textContent = error.message;
      return;
    }
    board.replaceChildren(...STATES.map((state) => {
      const mine = cos.filter((co) => co.status === state);
      return h("div", { class: "column", dataset: { status: state }, role: "region", "aria-label": state },
        h("h3", {}, state, h("span", { class: "muted" }, String(mine.length))),
        mine.map(card));
    }));
  }

  section.append(h("form", { class: "toolbar", role: "search", onsubmit: (e) => { e.preventDefault(); load(); } },
    query, h("button", { type: "submit" }, "Search")));

  if (writer) {
    const title = h("input", { id: "co-title", required: true, maxlength: 500, placeholder: "title" });
    const type = h("input", { id: "co-type", maxlength: 64, placeholder: "type (task, project…)" });
    const domain = h("input", { id: "co-domain", maxlength: 64, placeholder: "domain (work…)" });
    section.append(h("form", { class: "toolbar", id: "co-create", onsubmit: async (event) => {
      event.preventDefault();
      const body = { title: title.value.trim() };
      if (type.value.trim()) body.semantic_type = type.value.trim();
      if (domain.value.trim()) body.domain_tag = domain.value.trim();
      try {
        const co = await post("/v1/cos", body);
        status.textContent = `created “${co.title}”`;
        title.value = "";
        await load();
      } catch (error) {
        status.textContent = error.message;
      }
    } }, h("label", { for: "co-title" }, "New"), title, type, domain,
      h("button", { type: "submit", class: "primary" }, "Create")));
  }
  section.append(status, board);

  let loadSuggestions = async () => {};
  if (writer) {
    const list = h("div", { id: "co-suggestions" });
    section.append(h("h3", {}, "Suggestions from the agent"), list);
    loadSuggestions = async () => {
      let pending;
      try {
        pending = await get("/v1/cos/suggestions?status=pending");
      } catch (error) {
        list.replaceChildren(h("p", { class: "status error" }, error.message));
        return;
      }
      if (!pending.length) {
        list.replaceChildren(h("p", { class: "muted" }, "No pending suggestion."));
        return;
      }
      list.replaceChildren(...pending.map((s) => {
        const decide = async (decision) => {
          try {
            await post(`/v1/cos/suggestions/${encodeURIComponent(s.suggestion_id)}`, { decision });
            status.textContent = `suggestion ${decision}ed`;
            await Promise.all([load(), loadSuggestions()]);
          } catch (error) {
            status.textContent = error.message;
          }
        };
        const what = s.kind === "create" ? `create “${s.fields?.title ?? "?"}”` : `${s.trigger} on ${s.co_id}`;
        return h("article", { class: "card", dataset: { suggestion: s.suggestion_id } },
          h("strong", {}, what), s.reason ? h("p", { class: "muted" }, s.reason) : null,
          h("div", { class: "decide" },
            h("button", { type: "button", class: "ok", onclick: () => decide("confirm") }, "Confirm"),
            h("button", { type: "button", class: "danger", onclick: () => decide("dismiss") }, "Dismiss")));
      }));
    };
    loadSuggestions();
  }

  // The COL's own events: each is announced after the COL recorded it, so a read after it sees it.
  let pending = null;
  const stream = live({
    subjects: "co.created,co.updated,co.transitioned,co.suggestion_recorded,co.suggestion_decided",
    onEvent: () => {
      if (!pending) pending = setTimeout(() => { pending = null; load(); loadSuggestions(); }, 150);
    },
  });
  await load();
  return () => { stream.close(); clearTimeout(pending); };
}
