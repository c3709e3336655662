// The execution state machine drawn as inline SVG: its states as boxes, its transitions as arrows, each
// arrow labelled with its trigger(s) and how many of the given transitions took it. Transitions the
// topology does not know are listed under the diagram, never silently dropped.

const SVG = "http://www.w3.org/2000/svg";

// Where each of the seven states sits: the way in on the left, the terminal states on the right.
const BOX = { w: 124, h: 40 };
const PLACES = {
  pending: [16, 110], running: [250, 110], waiting: [250, 250],
  completed: [540, 10], failed: [540, 80], rejected: [540, 150], cancelled: [540, 250],
};

function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, String(value));
  for (const child of children) element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return element;
}

function place(status, index) {
  return PLACES[status] ?? [16, 10 + 60 * index];
}

/** The two ends of an arrow between boxes `a` and `b` (offset sideways for a pair drawn both ways). */
function ends(a, b, offset) {
  const [ax, ay] = a;
  const [bx, by] = b;
  if (ax === bx) {  // one above the other
    const down = by > ay;
    const x = ax + BOX.w / 2 + offset;
    return [x, down ? ay + BOX.h : ay, x, down ? by : by + BOX.h];
  }
  return [ax + BOX.w, ay + BOX.h / 2 + offset, bx, by + BOX.h / 2 + offset];
}

/** `{"from→to": {count, triggers:Set}}` for `transitions` (TransitionRecord list). */
export function countEdges(transitions) {
  const counts = new Map();
  for (const t of transitions ?? []) {
    const key = `${t.from_status}→${t.to_status}`;
    const entry = counts.get(key) ?? { count: 0, triggers: new Set() };
    entry.count += 1;
    entry.triggers.add(t.trigger);
    counts.set(key, entry);
  }
  return counts;
}

/**
 * The diagram for `topology` (StateMachineTopology) with counts from `transitions`; `caption` says
 * whose transitions were counted. Returns a <figure>.
 */
export function topologyDiagram(topology, transitions, caption) {
  const counts = countEdges(transitions);
  const pairs = new Map();  // one arrow per ordered pair, its triggers joined
  for (const edge of topology.edges ?? []) {
    const key = `${edge.from_status}→${edge.to_status}`;
    const pair = pairs.get(key) ?? { from: edge.from_status, to: edge.to_status, triggers: [] };
    pair.triggers.push(edge.trigger);
    pairs.set(key, pair);
  }
  const at = new Map((topology.nodes ?? []).map((node, i) => [node.status, place(node.status, i)]));
  const drawing = svg("svg", { viewBox: "0 0 680 300", class: "topology", role: "img",
    "aria-label": "Execution state machine with transition counts" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }))));

  for (const pair of pairs.values()) {
    const from = at.get(pair.from);
    const to = at.get(pair.to);
    if (!from || !to) continue;
    const back = pairs.has(`${pair.to}→${pair.from}`);
    const spread = from[0] === to[0] ? 40 : 14;  // labels of a vertical pair sit side by side
    const [x1, y1, x2, y2] = ends(from, to, back ? (pair.from < pair.to ? -spread : spread) : 0);
    const taken = counts.get(`${pair.from}→${pair.to}`)?.count ?? 0;
    const mx = (x1 + x2) / 2;
    const my = (y1 + y2) / 2;
    const label = `${pair.triggers.join("/")} ${taken}`;
    const width = 8 + label.length * 6.6;
    drawing.append(svg("g", { class: `edge${taken ? " taken" : ""}`, "data-from": pair.from, "data-to": pair.to,
      "data-count": taken },
      svg("title", {}, `${pair.from} → ${pair.to} (${pair.triggers.join(", ")}): ${taken}`),
      svg("line", { x1, y1, x2, y2, "marker-end": "url(#arrow)" }),
      svg("rect", { x: mx - width / 2, y: my - 9, width, height: 18, rx: 4 }),
      svg("text", { x: mx, y: my + 4, "text-anchor": "middle" },
        svg("tspan", { class: "trigger" }, `${pair.triggers.join("/")} `),
        svg("tspan", { class: "edge-count" }, String(taken)))));
  }
  for (const node of topology.nodes ?? []) {
    const [x, y] = at.get(node.status);
    const kind = node.is_terminal ? "terminal" : node.is_resumable ? "resumable" : node.is_initial ? "initial" : "";
    drawing.append(svg("g", { class: `state ${kind} ${node.status}`, "data-status": node.status },
      svg("rect", { x, y, width: BOX.w, height: BOX.h, rx: 8 }),
      svg("text", { x: x + BOX.w / 2, y: y + BOX.h / 2 + 5, "text-anchor": "middle" }, node.status)));
  }

  const unknown = [...counts.entries()].filter(([key]) => !pairs.has(key));
  const figure = document.createElement("figure");
  figure.className = "diagram";
  figure.append(drawing);
  const text = document.createElement("figcaption");
  text.className = "muted";
  text.textContent = caption + (unknown.length
    ? `; outside the topology: ${unknown.map(([key, v]) => `${key} ${v.count}`).join(", ")}` : "");
  figure.append(text);
  return figure;
}
