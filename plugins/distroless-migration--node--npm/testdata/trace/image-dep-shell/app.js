const http = require('node:http');
const lib = require('./lib.js');
http.createServer((req, res) => {
  if (req.url === '/never-requested') {
    res.end(String(lib.shelly()) + String(lib.wrapped()));
    return;
  }
  res.end('ok');
}).listen(8080, () => console.log('listening'));
