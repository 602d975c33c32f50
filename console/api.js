// The console's only way to data: GET requests to the query API of the service that served the page, relative to
// the page's address (so it holds under a proxy's path prefix), with the bearer token kept for this tab
// (sessionStorage) when the service asks for one. No cookie is read or set.

const TOKEN_KEY = 'tallyhouse.apiToken';
export const API_BASE = new URL('../api/v1/', document.baseURI);

export class AuthError extends Error {
  constructor(message, hadToken) {
    super(message);
    this.hadToken = hadToken;
  }
}

export class ApiError extends Error {
  constructor(status, message, parameter) {
    super(message);
    this.status = status;
    this.parameter = parameter;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** The API address of a route and its query (empty values left out). */
export function apiUrl(path, params = {}) {
  const url = new URL(path.replace(/^\//, ''), API_BASE);
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(one));
  }
  return url;
}

function headers(accept) {
  const h = { accept };
  const t = token();
  if (t) h.authorization = `Bearer ${t}`;
  return h;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  let parameter;
  try {
    const body = await response.json();
    if (body?.error?.message) message = body.error.message;
    parameter = body?.error?.parameter;
  } catch {
    // not JSON: the status line says it
  }
  if (response.status === 401) return new AuthError(message, Boolean(token()));
  return new ApiError(response.status, message, parameter);
}

/** GET a route's JSON answer; 401 is an AuthError (the page then asks for a token), other refusals an ApiError. */
export async function getJson(path, params = {}, { allow404 = false } = {}) {
  const response = await fetch(apiUrl(path, params), { headers: headers('application/json'), credentials: 'omit', cache: 'no-store' });
  if (allow404 && response.status === 404) return null;
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * Links to the same answer as CSV and JSON. The href is the API address itself (copyable, and what a browser opens
 * without a token on loopback); with a token, a click fetches it with the token and saves the file.
 */
export function exportLinks(path, params, { csv = true } = {}) {
  const p = document.createElement('p');
  p.className = 'links';
  p.append('Same data: ');
  for (const format of csv ? ['csv', 'json'] : ['json']) {
    const a = document.createElement('a');
    const url = apiUrl(path, { ...params, ...(csv ? { format } : {}) });
    a.href = url.href;
    a.textContent = format.toUpperCase();
    a.dataset.export = format;
    a.addEventListener('click', async (event) => {
      if (!token()) return;
      event.preventDefault();
      const response = await fetch(url, { headers: headers(format === 'csv' ? 'text/csv' : 'application/json'), credentials: 'omit' });
      if (!response.ok) return;
      const blob = await response.blob();
      const save = document.createElement('a');
      save.href = URL.createObjectURL(blob);
      save.download = `${path.replace(/\W+/g, '-').replace(/^-|-$/g, '')}.${format}`;
      save.click();
      setTimeout(() => URL.revokeObjectURL(save.href), 10_000);
    });
    p.append(a);
  }
  return p;
}
