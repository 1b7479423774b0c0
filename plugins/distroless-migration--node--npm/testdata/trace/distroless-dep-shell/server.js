'use strict';
// The app itself runs no shell: the dependency does, when it is required.
const rev = require('gitinfo');
console.log('revision', rev);
require('node:http').createServer((q, s) => s.end('ok')).listen(8080);
