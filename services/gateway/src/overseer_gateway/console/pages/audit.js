// Audit (operators): the firewall's hash-chained records, a page at a time, and Verify, which recomputes
// the chain and shows either that it holds or the first record where it breaks (that page is opened
// and the record highlighted). A firewall running as several replicas keeps one chain per replica: a
// chooser then picks the chain shown, and Verify checks them all and opens the broken one.

import { get } from "../api.js";
import { h } from "../dom.js";

const PAGE = 50;

function describe(record) {
  const r = record ?? {};
  const parts = [r.tool, r.level, r.decision, r.decided_by, r.responder, r.reason, r.session_id]
    .filter((part) => part !== undefined && part !== null && part !== "");
  if (!parts.length) {  // a record of another kind (policy, session control): its first plain fields
    for (const [key, value] of Object.entries(r)) {
      if (key !== "kind" && value !== null && typeof value !== "object") parts.push(`${key}=${value}`);
      if (parts.length >= 4) break;
    }
  }
  const line = parts.join(" · ");
  return line.length > 140 ? `${line.slice(0, 139)}…` : line;
}

export async function render(root, app) {
  const section = h("section", { class: "views audit" });
  root.append(section);
  section.append(h("div", { class: "conversation-head" }, h("h2", {}, "Audit")));
  if (!app.may("operator")) {
    section.append(h("p", { class: "empty" }, `The audit trail is for operators; a ${app.me.role} token may not read it.`));
    return undefined;
  }
  const result = h("div", { id: "audit-result", role: "status" });
  const rows = h("tbody", {});
  const where = h("span", { class: "muted" });
  const previous = h("button", { type: "button", id: "audit-previous" }, "← Earlier");
  const next = h("button", { type: "button", id: "audit-next" }, "Later →");
  const verify = h("button", { type: "button", id: "audit-verify", class: "primary" }, "Verify the chain");
  let after = -1;  // the page shows records with an index greater than this
  let broken = null;
  let chain = 0;  // which firewall replica's chain is shown
  let count = 1;
  try {
    count = (await get("/v1/audit/chains")).chains;
  } catch (error) {
    result.replaceChildren(h("p", { class: "status error" }, error.message));
  }
  const chooser = h("select", { id: "audit-chain", "aria-label": "audit chain" },
    ...Array.from({ length: count }, (_, k) => h("option", { value: String(k) }, `chain ${k} (firewall replica ${k})`)));
  chooser.hidden = count < 2;

  async function load(from) {
    let records;
    try {
      records = await get(`/v1/audit?after=${from}&limit=${PAGE}&chain=${chain}`);
    } catch (error) {
      result.replaceChildren(h("p", { class: "status error" }, error.message));
      return;
    }
    after = from;
    rows.replaceChildren(...records.map((entry) => {
      const record = entry.record ?? {};
      return h("tr", { dataset: { index: entry.index }, class: entry.index === broken ? "broken" : null },
        h("td", {}, String(entry.index)),
        h("td", {}, h("span", { class: "pill" }, record.kind ?? "?")),
        h("td", {}, record.execution_id ? h("a", { href: `#/executions/${encodeURIComponent(record.execution_id)}` },
          h("code", {}, record.execution_id)) : "—"),
        h("td", {}, describe(record)),
        h("td", {}, h("code", { class: "hash", title: `hash ${entry.hash}\nprev ${entry.prev_hash}` },
          entry.hash.slice(0, 12))),
        h("td", {}, h("details", {}, h("summary", {}, "record"), h("pre", {}, JSON.stringify(entry, null, 2)))));
    }));
    where.textContent = records.length
      ? `records ${records[0].index}–${records[records.length - 1].index}` : "no records here";
    previous.disabled = from < 0;
    next.disabled = records.length < PAGE;
    next.dataset.after = records.length ? String(records[records.length - 1].index) : String(from);
    rows.querySelector("tr.broken")?.scrollIntoView({ block: "center" });
  }

  chooser.addEventListener("change", () => {
    chain = Number(chooser.value);
    broken = null;
    load(-1);
  });
  previous.addEventListener("click", () => load(Math.max(-1, after - PAGE)));
  next.addEventListener("click", () => load(Number(next.dataset.after)));
  verify.addEventListener("click", async () => {
    verify.disabled = true;
    result.replaceChildren(h("p", { class: "muted" }, "Verifying…"));
    try {
      const answer = await get("/v1/audit/verify");
      broken = answer.ok ? null : answer.first_broken ?? null;
      const several = Array.isArray(answer.chains);
      const named = several ? `The chain of firewall replica ${answer.chain}` : "The chain";
      const anchored = answer.anchored === null || answer.anchored === undefined
        ? "not checked against the published heads"
        : `${answer.anchored} published heads checked, through record ${answer.anchored_through}`;
      result.replaceChildren(answer.ok
        ? h("p", { class: "verdict ok", dataset: { ok: "true" } },
          h("span", { class: "pill allowed" }, "ok"), several
            ? ` The ${answer.chains.length} chains of ${answer.records} records hold; each checked against its published heads.`
            : ` The chain of ${answer.records} records holds; ${anchored}.`)
        : h("p", { class: "verdict broken", dataset: { ok: "false", firstBroken: broken ?? "", chain: answer.chain ?? 0 } },
          h("span", { class: "pill denied" }, "broken"),
          broken !== null ? ` ${named} breaks at record ${broken}` : ` ${named} does not hold`,
          answer.reason ? `: ${answer.reason}` : "",
          answer.anchor_mismatch !== null && answer.anchor_mismatch !== undefined
            ? ` (a published head contradicts record ${answer.anchor_mismatch})` : "", "."));
      if (!answer.ok && several) {  // show the broken chain
        chain = answer.chain;
        chooser.value = String(chain);
      }
      if (broken !== null) await load(Math.max(-1, broken - Math.floor(PAGE / 2)));
    } catch (error) {
      result.replaceChildren(h("p", { class: "status error" }, error.message));
    } finally {
      verify.disabled = false;
    }
  });

  section.append(
    h("div", { class: "toolbar" }, chooser, verify, previous, next, where),
    result,
    h("div", { class: "scroll" }, h("table", { class: "grid audit-records" },
      h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "kind"), h("th", {}, "execution"),
        h("th", {}, "what"), h("th", {}, "hash"), h("th", {}, ""))),
      rows)));
  await load(-1);
  return undefined;
}
