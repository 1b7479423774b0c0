require('node:http').createServer((q, r) => r.end('ok\n')).listen(8080);
