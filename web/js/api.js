// Talking to the relay: JSON over fetch with the login cookie; every failure becomes an ApiError
// with the relay's own code and message (or "unreachable" when the relay could not be reached).

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

// A read-only view (#/s/<id>/read) marks every request: the relay refuses changes (409 read_only).
let readOnly = false;
export function setReadOnly(on) { readOnly = Boolean(on); }
export function extraHeaders() { return readOnly ? { "X-CB-Read-Only": "1" } : {}; }

const listeners = new Set();
/** Told of every request's outcome: true when the relay answered, false when it could not. */
export function onReachability(fn) { listeners.add(fn); }
function reached(ok) { for (const fn of listeners) fn(ok); }

export async function api(path, { method = "GET", body, signal } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method,
      signal,
      credentials: "same-origin",
      cache: "no-store",
      headers: body === undefined ? extraHeaders() : { ...extraHeaders(), "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    reached(false);
    throw new ApiError(0, "unreachable", "the relay cannot be reached");
  }
  reached(true);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const err = (data && data.error) || {};
    const { code, message, ...details } = err;
    throw new ApiError(response.status, code || "http_" + response.status,
      message || "the relay answered " + response.status, details);
  }
  return data;
}

export const get = (path, opts) => api(path, opts);
export const post = (path, body) => api(path, { method: "POST", body: body || {} });
export const patch = (path, body) => api(path, { method: "PATCH", body });
export const del = (path, body) => api(path, { method: "DELETE", body });
