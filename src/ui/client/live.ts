/**
 * The continuity page's only script (served as `/ui/live.js`, compiled by tsc, no bundler): live
 * updates and copy buttons. The page works without it; this only adds to it.
 *
 * Live updates: a server-sent event stream (`data-events`) says when the service's state changed
 * (a version number); the script then fetches the server-rendered `<main>` (`data-fragment`) and
 * swaps it in, keeping the keyboard focus where it was. Without EventSource, or while the stream
 * is down, it polls the fragment every few seconds instead.
 */

const POLL_MS = 3_000;

interface Fragment {
  version: number;
  title: string;
  html: string;
}

function status(text: string): void {
  const el = document.getElementById('live-status');
  if (el) el.textContent = text;
}

function enableCopyButtons(root: ParentNode): void {
  for (const button of root.querySelectorAll<HTMLButtonElement>('button.copy[data-copy]')) {
    button.hidden = false;
    button.onclick = () => {
      const pre = document.getElementById(button.dataset.copy ?? '');
      const text = pre?.textContent ?? '';
      const done = () => {
        button.textContent = 'Copied';
        setTimeout(() => {
          button.textContent = 'Copy command';
        }, 1_500);
      };
      if (navigator.clipboard) {
        navigator.clipboard.writeText(text).then(done, () => selectText(pre));
      } else {
        selectText(pre);
      }
    };
  }
}

function selectText(el: Element | null): void {
  if (!el) return;
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel?.removeAllRanges();
  sel?.addRange(range);
}

/** A selector that finds the same control after `<main>` is re-rendered. */
function focusSelector(el: Element | null, main: HTMLElement): string | undefined {
  if (!el || !main.contains(el) || el === main) return undefined;
  if (el instanceof HTMLButtonElement && el.dataset.copy)
    return `button[data-copy="${CSS.escape(el.dataset.copy)}"]`;
  if (el instanceof HTMLAnchorElement) return `a[href="${CSS.escape(el.getAttribute('href') ?? '')}"]`;
  if (el.id) return `#${CSS.escape(el.id)}`;
  return undefined;
}

function start(): void {
  const main = document.getElementById('main');
  enableCopyButtons(document);
  if (!main?.dataset.fragment) return;
  const fragmentUrl = main.dataset.fragment;
  let version = Number(main.dataset.version ?? '0');
  let loading = false;
  let again = false;

  const refresh = async (): Promise<void> => {
    if (loading) {
      again = true;
      return;
    }
    loading = true;
    try {
      const res = await fetch(fragmentUrl, { credentials: 'same-origin', cache: 'no-store' });
      if (!res.ok) {
        status(
          res.status === 404
            ? 'this session is no longer known to the service'
            : `update failed (${res.status})`,
        );
        return;
      }
      const f = (await res.json()) as Fragment;
      if (f.version !== version || main.dataset.version !== String(f.version)) {
        const keep = focusSelector(document.activeElement, main);
        main.innerHTML = f.html;
        main.dataset.version = String(f.version);
        version = f.version;
        document.title = f.title;
        enableCopyButtons(main);
        const target = keep ? main.querySelector<HTMLElement>(keep) : null;
        target?.focus();
      }
      status(`live · updated ${new Date().toLocaleTimeString()}`);
    } catch {
      status('live updates paused (service unreachable); retrying');
    } finally {
      loading = false;
      if (again) {
        again = false;
        void refresh();
      }
    }
  };

  let poll: number | undefined;
  const startPolling = () => {
    if (poll === undefined) poll = window.setInterval(() => void refresh(), POLL_MS);
  };
  const stopPolling = () => {
    if (poll !== undefined) window.clearInterval(poll);
    poll = undefined;
  };

  if (typeof EventSource === 'function' && main.dataset.events) {
    const events = new EventSource(main.dataset.events);
    events.addEventListener('version', (e) => {
      stopPolling();
      if (Number((e as MessageEvent<string>).data) !== version) void refresh();
      else status('live');
    });
    events.onerror = () => {
      status('live stream interrupted; polling');
      startPolling();
    };
  } else {
    startPolling();
  }
  status('live');
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
