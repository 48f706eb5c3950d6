// The live chat widget: embed with
//   <script src="https://<connector>/livechat/widget.js" data-integration="<integration id>" defer></script>
// It talks only to the connector it was loaded from. Texts are set with textContent, never as HTML.
(() => {
  const script = document.currentScript;
  const integration = script?.dataset.integration ?? '';
  if (!/^[0-9a-f-]{36}$/i.test(integration)) return;
  const api = (action) => new URL(`/livechat/${integration}/${action}`, script.src).toString();
  const storageKey = `inbox-livechat:${integration}`;

  const stylesheet = document.createElement('link');
  stylesheet.rel = 'stylesheet';
  stylesheet.href = new URL('/livechat/widget.css', script.src).toString();
  document.head.append(stylesheet);

  const el = (tag, props = {}, children = []) => {
    const node = Object.assign(document.createElement(tag), props);
    node.append(...children);
    return node;
  };
  const log = el('ol', { className: 'inbox-lc-log' });
  log.setAttribute('role', 'log');
  log.setAttribute('aria-live', 'polite');
  const status = el('p', { className: 'inbox-lc-status' });
  const nameInput = el('input', { name: 'name', maxLength: 80, required: true, autocomplete: 'name' });
  nameInput.setAttribute('aria-label', 'Your name');
  const nameForm = el('form', { className: 'inbox-lc-form' }, [
    nameInput,
    el('button', { type: 'submit', textContent: 'Start chat' }),
  ]);
  const textInput = el('input', { name: 'text', maxLength: 4096, required: true, autocomplete: 'off' });
  textInput.setAttribute('aria-label', 'Message');
  const textForm = el('form', { className: 'inbox-lc-form', hidden: true }, [
    textInput,
    el('button', { type: 'submit', textContent: 'Send' }),
  ]);
  const title = script.dataset.title || 'Chat with us';
  const panel = el('section', { className: 'inbox-lc-panel', hidden: true }, [
    el('header', { textContent: title }),
    log,
    status,
    nameForm,
    textForm,
  ]);
  panel.setAttribute('aria-label', title);
  const toggle = el('button', { className: 'inbox-lc-toggle', type: 'button', textContent: 'Chat' });
  toggle.setAttribute('aria-expanded', 'false');
  toggle.addEventListener('click', () => {
    panel.hidden = !panel.hidden;
    toggle.setAttribute('aria-expanded', String(!panel.hidden));
    (session ? textInput : nameInput).focus();
  });
  document.body.append(el('div', { className: 'inbox-lc' }, [panel, toggle]));

  let session = null;
  try {
    session = JSON.parse(sessionStorage.getItem(storageKey) ?? 'null');
  } catch {
    session = null;
  }
  const shown = new Set();
  const show = (message) => {
    if (shown.has(message.id)) return;
    shown.add(message.id);
    const item = el('li', {
      className: `inbox-lc-msg inbox-lc-${message.author}`,
      textContent: message.text,
    });
    item.dataset.author = message.author;
    log.append(item);
    log.scrollTop = log.scrollHeight;
  };
  const say = (text) => {
    status.textContent = text;
  };
  const errorOf = async (response) => {
    try {
      return (await response.json()).error ?? `HTTP ${response.status}`;
    } catch {
      return `HTTP ${response.status}`;
    }
  };

  // The stream is read with fetch, so the token travels in a header, never in an address; on a break
  // it reconnects naming the last event it saw (Last-Event-ID), and the connector sends the rest.
  let lastEventId = '';
  const listen = async () => {
    for (let delay = 1000; session; delay = Math.min(delay * 2, 30000)) {
      try {
        const headers = { authorization: `Bearer ${session.token}` };
        if (lastEventId) headers['last-event-id'] = lastEventId;
        const response = await fetch(api('stream'), { headers, cache: 'no-store' });
        if (response.status === 401) {
          forget();
          return;
        }
        if (response.ok && response.body) {
          delay = 1000;
          say('');
          await readEvents(response.body);
        }
      } catch {
        // A dropped connection: try again below.
      }
      say('Reconnecting…');
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  };
  const readEvents = async (body) => {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        let id = '';
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (!data) continue;
        if (id) lastEventId = id;
        try {
          show(JSON.parse(data));
        } catch {
          // Not ours to show.
        }
      }
    }
  };
  const forget = () => {
    session = null;
    sessionStorage.removeItem(storageKey);
    nameForm.hidden = false;
    textForm.hidden = true;
  };
  const started = () => {
    nameForm.hidden = true;
    textForm.hidden = false;
    void listen();
  };

  nameForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const response = await fetch(api('sessions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: nameInput.value }),
    });
    if (!response.ok) {
      say(await errorOf(response));
      return;
    }
    const created = await response.json();
    session = { token: created.token };
    sessionStorage.setItem(storageKey, JSON.stringify(session));
    say('');
    started();
    textInput.focus();
  });
  textForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const text = textInput.value;
    if (!session || !text.trim()) return;
    const response = await fetch(api('messages'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session.token}` },
      body: JSON.stringify({ text }),
    });
    if (!response.ok) {
      say(await errorOf(response));
      if (response.status === 401) forget();
      return;
    }
    textInput.value = '';
    say('');
  });

  if (session) started();
})();
