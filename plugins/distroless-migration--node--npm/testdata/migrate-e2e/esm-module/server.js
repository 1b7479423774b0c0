import http from 'node:http';

const port = Number(process.env.PORT || 8080);
http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('hello from an ES module\n');
}).listen(port, () => console.log('listening on ' + port));
