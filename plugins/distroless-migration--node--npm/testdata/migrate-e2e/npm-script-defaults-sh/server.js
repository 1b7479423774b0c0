const http = require('http');
// The port and the mode come from bin/start.sh's defaults.
http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('mode ' + process.env.NODE_ENV + '\n');
}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
