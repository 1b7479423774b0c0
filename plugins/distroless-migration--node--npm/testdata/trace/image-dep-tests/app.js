const http = require('node:http');
const quiet = require('quiet');
http.createServer((req, res) => res.end(quiet())).listen(8080, () => console.log('listening'));
