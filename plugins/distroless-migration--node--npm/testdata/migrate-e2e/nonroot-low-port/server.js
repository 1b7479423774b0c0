const http = require('http');
// Port 80: only root may bind it without CAP_NET_BIND_SERVICE.
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('on port 80\n');
}).listen(80, () => console.log('listening on 80'));
