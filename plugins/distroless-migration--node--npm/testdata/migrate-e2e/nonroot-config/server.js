const fs = require('fs');
const http = require('http');
const path = require('path');

// The config directory is made on first start. As uid 65532 in a /app that
// root owns, mkdirSync fails with EACCES and the service never listens.
fs.mkdirSync(path.join(__dirname, 'config'), { recursive: true });
fs.writeFileSync('/app/config/settings.json', JSON.stringify({ started: true }));
http.createServer((req, res) => {
  const settings = fs.readFileSync('/app/config/settings.json', 'utf8');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(settings + '\n');
}).listen(8080, () => console.log('listening on 8080'));
