const fs = require('fs');
const http = require('http');
const path = require('path');

// The uploads folder is made on first start in the app's own directory,
// which its WORKDIR made as node: if root or another user owns that
// directory, the mkdir fails with EACCES and the service never listens.
const uploads = path.join(__dirname, 'uploads');
fs.mkdirSync(uploads, { recursive: true });
fs.writeFileSync(path.join(uploads, 'started'), new Date().toISOString());
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(fs.readdirSync(uploads).join('\n') + '\n');
}).listen(8080, () => console.log('listening on 8080'));
