'use strict';
console.log(require('node:child_process').execSync('echo hi').toString().trim());
require('node:http').createServer((q, s) => s.end('ok')).listen(8080);
