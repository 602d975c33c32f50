/**
 * URLs as a message may print them: without the credentials they can carry (a scrape target's
 * `https://user:password@host/metrics?token=...`, a TALLYHOUSE_URL with a user). Every message that prints a URL
 * passes it through `redactUrl` (or a whole text through `redactUrls`); CONTRIBUTING.md rule 5. A leaf: imports nothing.
 */

const REDACTED = 'REDACTED';

/** Query keys whose values are secrets: tokens, keys, passwords, signatures, sessions (matched anywhere in the key). */
const SECRET_KEY = /token|key|secret|pass|pwd|auth|sig|credential|session|jwt|bearer|cookie/i;

/** The URL with its user and password replaced by REDACTED, and the values of secret-looking query keys too. */
export function redactUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    // Not a URL we can take apart: nothing of it is printed.
    return '(a URL that could not be parsed)';
  }
  if (!/^[a-z][a-z0-9+.-]*:$/i.test(u.protocol)) return '(a URL that could not be parsed)';
  let changed = false;
  const userinfo = u.username || u.password ? `${REDACTED}@` : '';
  if (userinfo) changed = true;
  const query = u.search
    ? `?${u.search
        .slice(1)
        .split('&')
        .map((pair) => {
          const eq = pair.indexOf('=');
          const key = eq < 0 ? pair : pair.slice(0, eq);
          let decoded = key;
          try {
            decoded = decodeURIComponent(key.replace(/\+/g, ' '));
          } catch {
            // a malformed escape: judge the key as written
          }
          if (eq < 0 || !SECRET_KEY.test(decoded)) return pair;
          changed = true;
          return `${key}=${REDACTED}`;
        })
        .join('&')}`
    : '';
  // The fragment never goes to a server, but is printed as little as the rest of a secret would be.
  const hash = u.hash ? `#${REDACTED}` : '';
  if (hash) changed = true;
  // Nothing secret in it: printed as given (no normalisation a reader would not recognise).
  if (!changed) return raw;
  const host = u.host ? `//${userinfo}${u.host}` : '';
  return `${u.protocol}${host}${u.pathname}${query}${hash}`;
}

/** Every http(s) URL in `text`, redacted (an error message that quotes the URL it failed on). */
export function redactUrls(text: string): string {
  return text.replace(/\bhttps?:\/\/[^\s"'<>`]+/gi, (url) => redactUrl(url));
}
