// The console's router: the page and its state live in the address (#page?key=value), so a view can be shared
// and reloaded. The service's own clock decides "today" (the /budgets answer carries it), never the browser's.
import { AuthError, getJson, setToken, token } from './api.js';
import * as pages from './pages.js';

const PAGES = { overview: pages.overview, changes: pages.changes, anomalies: pages.anomalies, budgets: pages.budgets, efficiency: pages.efficiency, trace: pages.trace };
const main = document.getElementById('main');
const dialog = document.getElementById('token-dialog');
const forget = document.getElementById('forget-token');
let context;
let generation = 0;

function route() {
  const hash = location.hash.replace(/^#/, '');
  const [name, query = ''] = hash.split('?');
  const page = name in PAGES ? name : 'overview';
  return { page, state: Object.fromEntries(new URLSearchParams(query)) };
}

async function loadContext() {
  // "Today" and "this month" as the service sees them, and the timezone its budgets are kept in.
  const b = await getJson('budgets');
  return { today: b.today, month: b.month, timezone: b.timezone, budgets: b };
}

function askForToken(err) {
  const why = document.getElementById('token-error');
  if (err.hadToken) {
    why.textContent = `The service refused that token: ${err.message}. Enter another of its API_TOKENS.`;
    why.hidden = false;
    setToken(null);
  } else {
    why.hidden = true;
  }
  main.replaceChildren(pages.h('p', { class: 'error', role: 'alert', 'data-error': 'auth' }, err.hadToken ? 'The API token was refused (401). Enter a valid token to see the data.' : 'This service needs an API token to show its data.'));
  if (!dialog.open) dialog.showModal();
  document.getElementById('token-input').focus();
}

async function render() {
  const mine = ++generation;
  const { page, state } = route();
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.getAttribute('href') === `#${page}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = `${page[0].toUpperCase()}${page.slice(1)} · Tallyhouse console`;
  main.dataset.page = page;
  main.dataset.ready = 'false';
  main.setAttribute('aria-busy', 'true');
  forget.hidden = !token();
  try {
    context ??= await loadContext();
    let marked = false;
    const draw = (nodes) => {
      if (mine !== generation) return;
      main.replaceChildren(...nodes.filter(Boolean));
      // Time to first data: the first figures drawn after this navigation.
      if (!marked) performance.mark(`tallyhouse:data:${page}`);
      marked = true;
    };
    const nodes = await PAGES[page](state, { ...context, draw });
    draw(nodes);
  } catch (err) {
    if (mine !== generation) return;
    if (err instanceof AuthError) {
      context = undefined;
      askForToken(err);
    } else {
      main.replaceChildren(pages.h('h1', {}, page), pages.h('p', { class: 'error', role: 'alert', 'data-error': 'api' }, `Could not load this page: ${err.message}`));
    }
  } finally {
    if (mine === generation) {
      main.dataset.ready = 'true';
      main.removeAttribute('aria-busy');
    }
  }
}

document.getElementById('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const value = document.getElementById('token-input').value.trim();
  if (!value) return;
  setToken(value);
  document.getElementById('token-input').value = '';
  dialog.close();
  render();
});
forget.addEventListener('click', () => {
  setToken(null);
  context = undefined;
  render();
});
window.addEventListener('hashchange', render);
render();
