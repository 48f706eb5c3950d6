const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A page standing in for a customer's website, with the widget embedded as a site would embed it. */
export function demoPage(integrationId: string, chatName: string): string {
  const name = escapeHtml(chatName);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Live chat demo</title>
</head>
<body>
<main>
<h1>A demo website</h1>
<p>This page embeds the live chat widget of "${name}" with one tag:</p>
<pre>&lt;script src="/livechat/widget.js" data-integration="${integrationId}" defer&gt;&lt;/script&gt;</pre>
<p>Open the chat at the bottom right, give your name and write. Operators answer from the panel or
with an external send into the conversation.</p>
</main>
<script src="/livechat/widget.js" data-integration="${integrationId}" data-title="${name}" defer></script>
</body>
</html>
`;
}
