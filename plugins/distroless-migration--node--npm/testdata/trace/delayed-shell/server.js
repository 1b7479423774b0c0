'use strict';
// Nothing shells out at start-up or in a request: a job that runs 3 s
// after the service listens does, as a scheduled task would.
const { exec } = require('node:child_process');
const server = require('node:http').createServer((q, s) => s.end('ok\n'));
server.listen(8080, () => {
  setTimeout(() => exec('echo late', () => {}), 3000);
});
