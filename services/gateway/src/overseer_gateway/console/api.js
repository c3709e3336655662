// The gateway's API as the console uses it: bearer-token fetch, problem+json errors as readable
// messages, and the live event stream that resumes from the last seq it saw.

const TOKEN_KEY = "overseer.token";

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** An answer the gateway refused: `status` and the problem document's `detail`. */
export class ApiError extends Error {
  constructor(status, detail, problem) {
    super(detail);
    this.status = status;
    this.problem = problem;
  }
}

async function readProblem(response) {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
    return new ApiError(response.status, `${response.status} ${body.title ?? response.statusText}: ${detail}`, body);
  } catch {
    return new ApiError(response.status, `${response.status} ${response.statusText}: ${text.slice(0, 300)}`, null);
  }
}

/** `fetch` with the token; the parsed JSON answer, or an ApiError. */
export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const current = token();
  if (current) headers.Authorization = `Bearer ${current}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, `the gateway is not reachable (${error.message})`, null);
  }
  if (!response.ok) throw await readProblem(response);
  return response.status === 204 ? null : response.json();
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body);
export const put = (path, body) => api("PUT", path, body);

/**
 * `refresh` run one at a time, in the order asked: `soon()` gathers the asks of the next 100 ms into
 * one run, `now()` runs it after any run under way. Runs never overlap, so an older answer never
 * redraws over a newer one (an event and the stream's reopening may both ask while a fetch is out).
 */
export function refresher(refresh, delay = 100) {
  let timer = null;
  let running = Promise.resolve();
  function now() {
    running = running.catch(() => {}).then(() => refresh());
    return running;
  }
  return {
    now,
    soon() {
      if (timer) return;
      timer = setTimeout(() => { timer = null; now(); }, delay);
    },
    stop() {
      clearTimeout(timer);
      timer = null;
    },
  };
}

/**
 * The live stream: `onEvent({seq, subject, type, event})` for each event matching `subjects` (and
 * `session`). After a dropped connection it reconnects with `since=<last seq>`, so nothing is missed.
 * Returns `close()`.
 */
export function live({ subjects, session, since, onEvent, onState }) {
  let last = since ?? null;
  let socket = null;
  let closed = false;
  let delay = 500;

  function url() {
    const params = new URLSearchParams();
    if (subjects) params.set("subjects", subjects);
    if (session) params.set("session", session);
    if (last !== null) params.set("since", String(last));
    params.set("token", token() ?? "");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/v1/ws?${params}`;
  }

  function open() {
    if (closed) return;
    socket = new WebSocket(url());
    socket.onopen = () => {
      delay = 500;
      onState?.("open");
    };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (typeof frame.seq === "number") last = frame.seq;
      onEvent(frame);
    };
    socket.onclose = () => {
      if (closed) return;
      onState?.("reconnecting");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 8000);
    };
  }

  open();
  return {
    close() {
      closed = true;
      socket?.close();
    },
    get last() {
      return last;
    },
  };
}
