const fs = require('fs');
const http = require('http');
// The service writes into /app/data, which a RUN step made and handed to
// the user it runs as: the rewrite must keep that ownership.
fs.writeFileSync('/app/data/started', new Date().toISOString());
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('data dir ready\n');
}).listen(8080, () => console.log('listening on 8080'));
