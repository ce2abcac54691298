// The conformance run's "browser" ($BROWSER): it GETs the authorization URL Keel opens and follows
// the redirects, as a signed-in user's browser would, so the code lands on Keel's loopback listener.
const url = process.argv[2];
if (!url) {
  process.stderr.write('browser.mjs: no URL\n');
  process.exit(2);
}
const response = await fetch(url, { redirect: 'follow' });
process.stderr.write(`browser.mjs: ${response.status} ${response.url}\n`);
process.exit(response.ok ? 0 : 1);
