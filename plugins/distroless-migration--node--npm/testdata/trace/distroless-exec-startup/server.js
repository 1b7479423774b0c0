'use strict';
// At start-up the app asks git for its revision through a shell; on a
// shell-less base the spawn fails with ENOENT and the app crashes.
require('node:child_process').exec('git rev-parse HEAD', (err, out) => {
  if (err) throw err;
  console.log(out.trim());
});
require('node:http').createServer((q, s) => s.end('ok')).listen(8080);
