'use strict';
require('node:http').createServer((q, s) => s.end('ok')).listen(8080);
