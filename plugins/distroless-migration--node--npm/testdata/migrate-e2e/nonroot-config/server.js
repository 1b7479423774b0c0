const fs = require('fs');
const http = require('http');
const path = require('path');

// The settings are written on first start into /app/config, which COPY
// made and root owns: as uid 65532 the write fails with EACCES and the
// service never listens.
const defaults = fs.readFileSync(path.join(__dirname, 'config', 'settings.default.json'), 'utf8');
fs.writeFileSync('/app/config/settings.json', JSON.stringify({ ...JSON.parse(defaults), started: true }));
http.createServer((req, res) => {
  const settings = fs.readFileSync('/app/config/settings.json', 'utf8');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(settings + '\n');
}).listen(8080, () => console.log('listening on 8080'));
